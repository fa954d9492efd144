// @ts-check
// Upload by drag-and-drop anywhere on the page or with a file input: the
// raw file is the request body (PROTOCOL.md §3), sent with XMLHttpRequest
// because fetch reports no upload progress. On success the viewer for the
// new trace opens; a refused file leaves a clear message.

'use strict';

/**
 * @typedef {object} UploadUI
 * @property {(text: string) => void} status   progress and messages
 * @property {(text: string) => void} error    a refused upload
 * @property {HTMLInputElement | null} [input] a file input to watch
 */

/**
 * Sends a file; resolves with the trace id.
 * @param {File} file @param {(percent: number) => void} progress
 * @returns {Promise<string>}
 */
export function upload(file, progress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/traces?name=${encodeURIComponent(file.name)}`);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) progress((100 * e.loaded) / e.total);
    };
    xhr.onload = () => {
      let j = null;
      try {
        j = JSON.parse(xhr.responseText);
      } catch {
        // not JSON
      }
      if (xhr.status >= 200 && xhr.status < 300 && j && typeof j.id === 'string' && /^[0-9a-f-]{36}$/.test(j.id)) {
        resolve(j.id);
      } else {
        reject(new Error(j && typeof j.error === 'string' ? j.error : `upload failed: ${xhr.status} ${xhr.statusText}`));
      }
    };
    xhr.onerror = () => reject(new Error('upload failed: the connection to the server broke'));
    xhr.send(file);
  });
}

/**
 * Makes the whole page a drop zone (and watches the file input).
 * @param {UploadUI} ui
 */
export function enableUpload(ui) {
  const body = document.body;
  let depth = 0;
  const hasFiles = (/** @type {DragEvent} */ e) => !!e.dataTransfer && [...e.dataTransfer.types].includes('Files');
  document.addEventListener('dragenter', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth++;
    body.classList.add('dragging');
  });
  document.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
  });
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) body.classList.remove('dragging');
  });
  document.addEventListener('drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    body.classList.remove('dragging');
    const f = e.dataTransfer?.files[0];
    if (f) send(f, ui);
  });
  ui.input?.addEventListener('change', () => {
    const f = ui.input?.files?.[0];
    if (f) send(f, ui);
  });
}

/** @param {File} f @param {UploadUI} ui */
async function send(f, ui) {
  ui.status(`Uploading ${f.name}…`);
  try {
    const id = await upload(f, (p) => ui.status(`Uploading ${f.name}: ${Math.floor(p)}%`)); // rounded down: 99.6 % is not done
    ui.status(`Uploaded ${f.name}; opening…`);
    location.href = `/t/${id}`;
  } catch (e) {
    ui.status('');
    ui.error(`${f.name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
