package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAxisLabelsNeverRepeat checks the time axis at every zoom level from
// a day down to the deepest zoom, at times past 2^53 ns: neighbouring tick
// labels differ and increase, and each names its tick's exact time (g2's
// "1.17ms 1.17ms 1.17ms" must not happen).
func TestAxisLabelsNeverRepeat(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var bad []string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		eval(`import('/js/viewport.js').then(m => {
  const bad = [];
  const origins = [0n, 9007199254740993n, 1700000000123456789n];
  for (const origin of origins) {
    for (let npp = 86400e9 / 1500; npp >= m.MIN_NS_PER_PX; npp /= 3.7) {
      const start = origin + 1234567891234n + BigInt(Math.round(npp * 17));
      const vp = new m.Viewport(start, npp, 1500);
      const tk = vp.ticks(90, origin);
      const rel1 = vp.end - origin;
      const unit = m.unitFor(rel1 < 0n ? -rel1 : rel1);
      const labels = tk.ticks.map(t => m.formatTime(t - origin, unit, tk.step));
      if (tk.ticks.length < 2) bad.push('few ticks at ' + npp);
      for (let i = 1; i < labels.length; i++)
        if (labels[i] === labels[i-1]) bad.push(npp + ' ns/px: ' + labels[i] + ' repeats');
      // The label is exact: parse it back to ns.
      for (let i = 0; i < labels.length; i++) {
        const [num, u] = labels[i].split(' ');
        const size = m.UNITS.find(x => x[0] === u)[1];
        const [ip, fp = ''] = num.split('.');
        const ns = BigInt(ip) * size + (fp ? BigInt(fp.padEnd(size.toString().length - 1, '0')) : 0n);
        if (ns !== tk.ticks[i] - origin) bad.push(labels[i] + ' is not ' + (tk.ticks[i] - origin));
      }
    }
  }
  return bad.slice(0, 20);
})`, &bad),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
