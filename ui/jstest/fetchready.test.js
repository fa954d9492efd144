// fetchReady (ui/static/js/conn.js): a 503 with Retry-After is asked again
// after that long; any other answer, a 503 without Retry-After included,
// is returned as it came.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fetchReady } from '../static/js/conn.js';

/** A fetch that answers with the given statuses in turn and counts its calls. @param {Array<[number, Record<string,string>]>} answers */
function fakeFetch(answers) {
  const calls = [];
  globalThis.fetch = async (url) => {
    calls.push({ url, at: Date.now() });
    const [status, headers] = answers[Math.min(calls.length, answers.length) - 1];
    return new Response(status === 204 ? null : '{}', { status, headers });
  };
  return calls;
}

test('a 503 with Retry-After is asked again after it', async () => {
  const calls = fakeFetch([[503, { 'Retry-After': '1' }], [200, {}]]);
  const r = await fetchReady('/api/x');
  assert.equal(r.status, 200);
  assert.equal(calls.length, 2);
  assert.ok(calls[1].at - calls[0].at >= 990, `asked again after ${calls[1].at - calls[0].at} ms`);
});

test('other answers come back at once', async () => {
  for (const [status, headers] of [[503, {}], [404, { 'Retry-After': '1' }], [200, {}]]) {
    const calls = fakeFetch([[status, headers], [200, {}]]);
    const r = await fetchReady('/api/y');
    assert.equal(r.status, status);
    assert.equal(calls.length, 1);
  }
});
