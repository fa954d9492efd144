// @ts-check
// Entry point of the library page: uploads (drop anywhere, or the file
// input), the live demo, attaching to a running .NET process and deletes
// without a page reload; rows still indexing or live follow the server.
// Without script the page still works through its links and delete forms
// (the .NET section needs script and stays hidden).

'use strict';

import { enableAttach } from './js/dotnet.js';
import { enableUpload } from './js/upload.js';

const status = document.getElementById('status') ?? document.body.appendChild(document.createElement('div'));
const message = document.createElement('div');
message.className = 'message';
message.setAttribute('role', 'status');
status.append(message);

/** @param {string} text */
function banner(text) {
  const b = document.createElement('div');
  b.className = 'banner';
  b.setAttribute('role', 'alert');
  const span = document.createElement('span');
  span.textContent = text;
  const close = document.createElement('button');
  close.type = 'button';
  close.className = 'close';
  close.title = 'dismiss';
  close.textContent = '×';
  close.addEventListener('click', () => b.remove());
  b.append(span, close);
  status.append(b);
}

enableUpload({
  status: (t) => (message.textContent = t),
  error: banner,
  input: /** @type {HTMLInputElement | null} */ (document.getElementById('upload-file')),
});

// With script the file uploads as soon as it is chosen (raw body, with
// progress); the form's own submit stays for pages without script.
document.getElementById('upload-form')?.addEventListener('submit', (e) => {
  e.preventDefault();
  document.getElementById('upload-file')?.dispatchEvent(new Event('change'));
});

// The live demo (POST /api/live/demo, PROTOCOL.md §live): the demo trace
// recorded as if a program wrote it now; its page opens at once.
document.getElementById('live-demo')?.addEventListener('click', async (e) => {
  const b = /** @type {HTMLButtonElement} */ (e.currentTarget);
  b.disabled = true;
  try {
    const r = await fetch('/api/live/demo', { method: 'POST' });
    const j = await r.json().catch(() => ({}));
    if (!r.ok || typeof j.id !== 'string' || !/^[0-9a-f-]{36}$/.test(j.id)) throw new Error(j.error || `${r.status} ${r.statusText}`);
    location.assign(`/t/${j.id}`);
  } catch (err) {
    b.disabled = false;
    banner(`The live demo did not start: ${err instanceof Error ? err.message : String(err)}`);
  }
});

// Running .NET processes: listed while the page is open; Attach opens the
// live trace's page.
const dotnet = document.getElementById('dotnet');
const dotnetBody = document.querySelector('#dotnet-processes tbody');
if (dotnet && dotnetBody instanceof HTMLTableSectionElement) enableAttach({ section: dotnet, body: dotnetBody, error: banner });

// Rows still indexing or live: poll the list, show a live trace's events
// so far, and reload when one is done.
const pending = new Set(
  [...document.querySelectorAll('#traces tr[data-id]')]
    .filter((tr) => tr.querySelector('.state'))
    .map((tr) => tr.getAttribute('data-id')),
);
if (pending.size) {
  const timer = setInterval(async () => {
    try {
      const r = await fetch('/api/traces');
      if (!r.ok) return;
      const list = await r.json();
      for (const t of list) {
        if (!pending.has(t.id) || t.state !== 'live' || !/^[0-9a-f-]{36}$/.test(t.id)) continue;
        const cell = document.querySelector(`#traces tr[data-id="${t.id}"] .state`);
        const n = Number(t.progress?.events ?? 0);
        if (cell && Number.isFinite(n)) cell.textContent = `live · ${n.toLocaleString('en-US')}`;
      }
      if (list.some((/** @type {any} */ t) => pending.has(t.id) && (t.state === 'ready' || t.state === 'failed'))) {
        clearInterval(timer);
        location.reload();
      }
    } catch {
      // the server may be restarting: try again on the next tick
    }
  }, 1500);
}

for (const form of document.querySelectorAll('#traces form')) {
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const row = form.closest('tr');
    const id = row?.getAttribute('data-id') ?? '';
    if (!/^[0-9a-f-]{36}$/.test(id)) return;
    const name = row?.querySelector('a.open')?.textContent ?? id;
    if (!confirm(`Delete ${name} from the library?`)) return;
    const r = await fetch(`/api/traces/${id}`, { method: 'DELETE' });
    if (r.ok) row?.remove();
    else banner(`Could not delete ${name}: ${r.status} ${r.statusText}`);
  });
}
