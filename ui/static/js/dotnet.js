// @ts-check
// The library's "Running .NET processes" section (PROTOCOL.md §live):
// polls GET /api/dotnet/processes while the page is open and lists each
// process with its profile boxes, a providers box and an Attach button,
// which starts a session (POST /api/dotnet/attach) and opens the live
// trace's page. The section stays hidden when there is no process, and
// for good when the server does not allow attaching (403); its
// data-state says which ("off", "empty", "listed").

'use strict';

/**
 * @typedef {object} Process
 * @property {number} pid
 * @property {string} command_line
 * @property {string} socket
 *
 * @typedef {object} Profile
 * @property {string} name
 * @property {string} description
 *
 * @typedef {object} AttachUI
 * @property {HTMLElement} section  shown when there are processes
 * @property {HTMLTableSectionElement} body  one row per process
 * @property {(text: string) => void} error  a refused attach
 * @property {number} [every]  ms between polls
 */

/** The profile checked in a new row. */
const DEFAULT_PROFILE = 'cpu';

/**
 * Starts polling; returns a function that stops it.
 * @param {AttachUI} ui
 * @returns {() => void}
 */
export function enableAttach(ui) {
  /** @type {Map<number, HTMLTableRowElement>} */
  const rows = new Map();
  let timer = 0;
  let stopped = false;

  const poll = async () => {
    timer = 0;
    try {
      const r = await fetch('/api/dotnet/processes');
      if (r.status === 403 || r.status === 404) {
        ui.section.hidden = true;
        ui.section.dataset.state = 'off';
        stopped = true; // not allowed on this server: do not ask again
        return;
      }
      if (r.ok) show(await r.json());
    } catch {
      // the server may be restarting: try again on the next tick
    }
    if (!stopped) timer = window.setTimeout(poll, ui.every ?? 3000);
  };

  /** @param {{processes?: Process[], profiles?: Profile[]}} list */
  const show = (list) => {
    const procs = (list.processes ?? []).filter((p) => Number.isSafeInteger(p.pid) && p.pid > 0);
    const profiles = (list.profiles ?? []).filter((p) => typeof p.name === 'string' && /^[\w-]+$/.test(p.name));
    const seen = new Set(procs.map((p) => p.pid));
    for (const [pid, tr] of rows) {
      if (!seen.has(pid)) {
        tr.remove();
        rows.delete(pid);
      }
    }
    // New rows go in pid order; existing ones keep what the user typed.
    for (const p of procs.sort((a, b) => a.pid - b.pid)) {
      if (rows.has(p.pid)) continue;
      const tr = row(p, profiles, ui.error);
      const before = [...rows.keys()].filter((pid) => pid < p.pid);
      if (!before.length) ui.body.prepend(tr);
      else rows.get(Math.max(...before))?.after(tr);
      rows.set(p.pid, tr);
    }
    ui.section.hidden = rows.size === 0;
    ui.section.dataset.state = rows.size ? 'listed' : 'empty';
  };

  poll();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

/**
 * A process's row: pid, command line, profile boxes, providers, Attach.
 * @param {Process} p @param {Profile[]} profiles @param {(text: string) => void} error
 * @returns {HTMLTableRowElement}
 */
function row(p, profiles, error) {
  const tr = document.createElement('tr');
  tr.dataset.pid = String(p.pid);
  const cell = () => tr.appendChild(document.createElement('td'));
  const pid = cell();
  pid.className = 'num';
  pid.textContent = String(p.pid);
  const cmd = cell();
  cmd.className = 'cmdline';
  cmd.textContent = p.command_line || '(command line unknown)';
  cmd.title = `${p.command_line}\n${p.socket}`;

  const boxes = cell();
  for (const prof of profiles) {
    const label = document.createElement('label');
    label.title = prof.description;
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.name = 'profiles';
    box.value = prof.name;
    box.checked = prof.name === DEFAULT_PROFILE;
    label.append(box, ` ${prof.name}`);
    boxes.append(label, ' ');
  }

  const providers = document.createElement('input');
  providers.type = 'text';
  providers.name = 'providers';
  providers.placeholder = 'My-EventSource:0x0:verbose';
  providers.setAttribute('aria-label', `more providers for process ${p.pid}`);
  cell().append(providers);

  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'attach';
  button.textContent = 'Attach';
  button.title = `trace process ${p.pid} live`;
  cell().append(button);

  button.addEventListener('click', async () => {
    const chosen = [...boxes.querySelectorAll('input:checked')].map((b) => /** @type {HTMLInputElement} */ (b).value);
    if (!chosen.length && !providers.value.trim()) {
      error(`Choose a profile or name a provider to trace process ${p.pid}.`);
      return;
    }
    button.disabled = true;
    try {
      const r = await fetch('/api/dotnet/attach', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ pid: p.pid, profiles: chosen, providers: providers.value }),
      });
      const j = await r.json().catch(() => ({}));
      if (!r.ok || typeof j.id !== 'string' || !/^[0-9a-f-]{36}$/.test(j.id)) throw new Error(j.error || `${r.status} ${r.statusText}`);
      location.assign(`/t/${j.id}`);
    } catch (err) {
      button.disabled = false;
      error(`Could not attach to process ${p.pid}: ${err instanceof Error ? err.message : String(err)}`);
    }
  });
  return tr;
}
