// @ts-check
// Actions: what each key of keys.js and each toolbar button does, by name.
// An action changes the model through the App, then the App asks for data,
// redraws and records the URL (push for discrete steps).

'use strict';

import { zoomStep, panStep, fullView, startView, endView, zoomSelectionView } from './navigate.js';
import { raise, sink, togglePin, chaseOrder, stepRow } from './tracks.js';
import { glyphs, nextGlyph } from './glyphs.js';
import { typeText, errText } from './panels.js';
import { viewChoices, openCompareMenu } from './comparelink.js';

/** @typedef {import('./app.js').App} App */

/**
 * The actions of an App, by the names keys.js and the toolbar use.
 * @param {App} app
 * @returns {Record<string, () => void>}
 */
export function actions(app) {
  const m = app.m;
  const view = (/** @type {import('./viewport.js').Viewport | null} */ vp) => vp && app.setView(vp, 'push');
  const moveTrack = (/** @type {number} */ d) => {
    // Derived rows and group headers are not tracks: step over them.
    const rows = m.rows.filter((r) => r >= 0);
    const top = rows.indexOf(m.rows.slice(m.top).find((r) => r >= 0) ?? -1);
    const i = stepRow(rows, m.selTrack, d, Math.max(0, top), app.rowsVisible());
    if (i >= 0) app.selectTrack(rows[i], true);
  };
  /** @param {number} d */
  const stepEvent = (d) => {
    if (m.selDerived >= 0) {
      app.stepSlice(d);
      return;
    }
    const track = m.selEvent ? m.selEvent.track : m.selTrack;
    if (track < 0) {
      moveTrack(1);
      return;
    }
    const g = glyphs(m.frame, track, m.hideTypes);
    if (g.length === 0) return;
    const from = m.selEvent && m.selEvent.track === track ? m.selEvent.time : m.vp.time(d > 0 ? 0 : m.vp.width);
    const pick = nextGlyph(g, from, d);
    if (pick) app.selectRef(pick.ref, { push: true, reveal: true, popup: false });
  };
  /** @param {(order: number[], id: number) => number[]} f */
  const reorder = (f) => {
    if (m.selTrack < 0) return;
    m.order = f(m.currentOrder(), m.selTrack);
    app.afterOrder();
  };

  return {
    zoomIn: () => view(zoomStep(m.vp, 1)),
    zoomOut: () => view(zoomStep(m.vp, -1)),
    panLeft: () => view(panStep(m.vp, -1)),
    panRight: () => view(panStep(m.vp, 1)),
    zoomAll: () => view(fullView(m.trace, app.plotWidth())),
    toStart: () => view(startView(m.vp, m.trace)),
    toEnd: () => view(endView(m.vp, m.trace)),
    zoomSelection: () => view(zoomSelectionView(m.vp, m.ruler, m.selEvent)),
    liveChase: () => app.live.toggle(),
    liveStop: () => { app.live.stop(); },
    back: () => history.back(),
    forward: () => history.forward(),

    rowsUp: () => app.scrollRows(-1),
    rowsDown: () => app.scrollRows(1),
    pageUp: () => app.scrollRows(-app.rowsVisible()),
    pageDown: () => app.scrollRows(app.rowsVisible()),
    taller: () => app.setRowH(Math.round(m.rowH * 1.25) + 1),
    shorter: () => app.setRowH(Math.round(m.rowH / 1.25)),
    trackUp: () => moveTrack(-1),
    trackDown: () => moveTrack(1),
    eventPrev: () => stepEvent(-1),
    eventNext: () => stepEvent(1),

    togglePopup: () => {
      if (!m.selEvent || !m.details) return;
      app.panels.togglePopup(m.details);
      app.schedule();
    },
    mark: () => {
      if (m.ruler) {
        m.ruler = null;
      } else {
        const t = m.selEvent ? m.selEvent.time : m.vp.time(m.vp.width / 2);
        m.ruler = { t0: t, t1: t };
        m.markKey = true;
      }
      app.schedule();
    },

    raise: () => reorder(raise),
    sink: () => reorder(sink),
    pin: () => {
      if (m.selTrack < 0) return;
      togglePin(m.pins, m.selTrack);
      app.afterOrder();
    },
    hideTrack: () => {
      if (m.selDerived >= 0) {
        m.hideDerived.add(m.selDerived);
        m.selDerived = -1;
        app.afterOrder();
        return;
      }
      if (m.selTrack < 0) return;
      m.hide.add(m.selTrack);
      const i = m.rows.indexOf(m.selTrack);
      app.layout();
      m.selTrack = m.rows[Math.min(i, m.rows.length - 1)] ?? -1;
      app.afterOrder();
    },
    showTracks: () => {
      m.hide.clear();
      m.hideDerived.clear();
      app.afterOrder();
    },
    chase: () => { chaseAction(app); },
    noChase: () => {
      m.order = [];
      app.afterOrder();
    },
    toggleMode: () => {
      m.mode = m.mode === 'event' ? 'summary' : 'event';
      app.ui.mode.textContent = m.mode === 'event' ? 'Summary' : 'Events';
      app.asked = null;
      app.request();
      app.schedule();
      app.pushURL();
    },
    toggleGroup: () => app.toggleGroup(),
    toggleFlows: () => app.toggleFlows(),
    toggleColor: () => {
      m.colorBy = m.colorBy === 'type' ? 'track' : 'type';
      app.schedule();
    },

    focusSearch: () => { app.ui.search.focus(); app.ui.search.select(); },
    focusFilter: () => { app.ui.filter.focus(); app.ui.filter.select(); },
    focusWhere: () => app.filter.focus(),
    toggleArea: () => app.area.toggle(),
    focusTypes: () => app.ui.typesAll.focus(),
    focusDetails: () => {
      if (!app.pane.open) app.pane.toggle();
      app.ui.details.focus();
    },
    toggleDetails: () => app.pane.toggle(),
    searchNext: () => app.search.step(1),
    searchPrev: () => app.search.step(-1),
    copyLink: () => { app.panels.copyLink(); },
    toggleStacks: () => app.stacks.toggle(),
    compareMenu: () => {
      const id = String(/** @type {any} */ (app.source).id ?? '');
      const b = /** @type {HTMLElement | null} */ (document.querySelector('[data-action="compareMenu"]'));
      if (id && b) openCompareMenu(b, viewChoices(id, m.vp, m.ruler));
    },
    help: () => app.panels.toggleHelp(),
    escape: () => escapeAction(app),
  };
}

/** Esc: closes the overlay, else clears the ruler, else the popups, else the selection. @param {App} app */
function escapeAction(app) {
  const m = app.m;
  if (app.panels.helpOpen) {
    app.panels.closeHelp();
  } else if (m.ruler || m.fence) {
    m.ruler = null;
    m.fence = null;
  } else if (m.popups.length) {
    m.popups = [];
  } else if (m.selEvent || m.selTrack >= 0) {
    m.clearSelection();
    app.panels.showDetails(null);
    app.pushURL();
  }
  app.schedule();
}

/** Chase (g2): order tracks by the next occurrence of the selected event's type. @param {App} app */
async function chaseAction(app) {
  const m = app.m;
  const d = m.details;
  if (!d || !m.selEvent) {
    app.panels.status('Chase needs a selected event.');
    return;
  }
  const ty = m.trace.types[d.type];
  if (!ty) return;
  const q = ty.name ? `#${ty.code} && ${ty.provider ? ty.provider + '/' : ''}${ty.name}` : `#${ty.code}`;
  app.panels.status(`Chasing ${typeText(ty)}…`);
  try {
    const r = await app.source.search(q);
    const c = chaseOrder(r.hits, d.time, m.currentOrder());
    m.order = c.order;
    m.top = 0;
    app.afterOrder();
    app.panels.status(`Chase: ${c.chased.length} tracks hold ${typeText(ty)} from the selected event on.`);
  } catch (e) {
    app.panels.banner(`chase failed: ${errText(e)}`);
  }
}
