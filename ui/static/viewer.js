// @ts-check
// Entry point of the viewer page (/t/{id}): reads the page data the server
// rendered, picks the data source and starts the timeline. The page data
// with "fake" instead of "ws" runs on a generated in-browser trace (the
// frontend's own test page, dev.html).

'use strict';

import { App } from './js/app.js';
import { FakeSource } from './js/fake.js';
import { WsSource } from './js/conn.js';
import { TogetherSource } from './js/together.js';
import { Offsets } from './js/offsets.js';
import { parseState, fromPageView } from './js/urlstate.js';

const blob = document.getElementById('page-data');
/** @type {any} */
const data = blob ? JSON.parse(blob.textContent || '{}') : {};
let root = document.getElementById('viewer');
if (!root) {
  root = document.createElement('main');
  root.id = 'viewer';
  document.body.append(root);
}
// The address bar is the truth (reload, Back/Forward); the page data holds
// the same state parsed by the server.
const initial = location.search ? parseState(location.search) : fromPageView(data.view);
// A combined view (/v?t=…) is several traces as one source (together.js).
const together = data.together ? new TogetherSource(data, initial.offsets) : null;
const source = data.fake ? new FakeSource(data.fake) : together ?? new WsSource(data);
const app = new App(root, source, initial);
/** @type {any} */ (window).__viewer = app;
app.start().then(() => {
  if (together && app.m.meta) new Offsets(app, together).bind();
});
