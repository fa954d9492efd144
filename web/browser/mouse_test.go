package browser

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// plotXY returns page coordinates of a point in the plot: fx of its width
// from the left, in the given row.
func plotXY(t *testing.T, ctx context.Context, fx float64, row int) (x, y float64) {
	t.Helper()
	var p struct{ X, Y float64 }
	js := `(() => { const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect();
	  return {X: r.left + v.labelW() + ` + ftoa(fx) + ` * v.vp.width, Y: r.top + 38 + ` + itoa(row) + ` * v.rowH + v.rowH / 2}; })()`
	if err := chromedp.Run(ctx, eval(js, &p)); err != nil {
		t.Fatal(err)
	}
	return p.X, p.Y
}

// labelXY returns page coordinates of a row's track label.
func labelXY(t *testing.T, ctx context.Context, row int) (x, y float64) {
	t.Helper()
	var p struct{ X, Y float64 }
	js := `(() => { const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect();
	  return {X: r.left + 10, Y: r.top + 38 + ` + itoa(row) + ` * v.rowH + v.rowH / 2}; })()`
	if err := chromedp.Run(ctx, eval(js, &p)); err != nil {
		t.Fatal(err)
	}
	return p.X, p.Y
}

// drag presses a button at (x0, y), moves to x1 in steps and releases.
func drag(x0, x1, y float64, button input.MouseButton, mods input.Modifier) chromedp.Tasks {
	opt := func(p *input.DispatchMouseEventParams) *input.DispatchMouseEventParams {
		return p.WithButton(button).WithModifiers(mods).WithClickCount(1)
	}
	tasks := chromedp.Tasks{chromedp.MouseEvent(input.MousePressed, x0, y, opt)}
	for i := 1; i <= 5; i++ {
		tasks = append(tasks, chromedp.MouseEvent(input.MouseMoved, x0+(x1-x0)*float64(i)/5, y, opt))
	}
	return append(tasks, chromedp.MouseEvent(input.MouseReleased, x1, y, opt))
}

// TestFakeMouse checks drag to pan, Shift+drag to fence and zoom, right
// drag for the time ruler and Ctrl+wheel zoom at the pointer.
func TestFakeMouse(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	// Zoom in first, so that panning is not held back at the trace's ends.
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dev.html"), waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID), chromedp.KeyEvent("ww")); err != nil {
		t.Fatal(err)
	}
	snap := func() (start string, span float64) {
		if err := chromedp.Run(ctx,
			eval(`String(window.__viewer.vp.start)`, &start),
			eval(`window.__viewer.vp.span`, &span)); err != nil {
			t.Fatal(err)
		}
		return
	}

	// Drag left by a quarter of the plot: the view moves right by a quarter.
	s0, span0 := snap()
	xa, y := plotXY(t, ctx, 0.6, 3)
	xb, _ := plotXY(t, ctx, 0.35, 3)
	if err := chromedp.Run(ctx, drag(xa, xb, y, input.Left, 0)); err != nil {
		t.Fatal(err)
	}
	s1, span1 := snap()
	var moved float64
	chromedp.Run(ctx, eval(`Number(window.__viewer.vp.start - BigInt(`+jsString(s0)+`)) / window.__viewer.vp.span`, &moved))
	if span1 != span0 || moved < 0.2 || moved > 0.3 {
		t.Errorf("drag: start %s → %s (moved %.3f of the span, want 0.25), span %v → %v", s0, s1, moved, span0, span1)
	}

	// Shift+drag over a fifth of the plot zooms to it.
	xa, y = plotXY(t, ctx, 0.4, 2)
	xb, _ = plotXY(t, ctx, 0.6, 2)
	if err := chromedp.Run(ctx, drag(xa, xb, y, input.Left, input.ModifierShift)); err != nil {
		t.Fatal(err)
	}
	_, span2 := snap()
	if r := span2 / span1; r < 0.18 || r > 0.22 {
		t.Errorf("fence: span %v → %v, want a fifth", span1, span2)
	}

	// Right drag: the ruler measures the interval.
	xa, y = plotXY(t, ctx, 0.25, 1)
	xb, _ = plotXY(t, ctx, 0.75, 1)
	var ruler float64
	if err := chromedp.Run(ctx,
		drag(xa, xb, y, input.Right, 0),
		eval(`window.__viewer.ruler ? Number(window.__viewer.ruler.t1 - window.__viewer.ruler.t0) / window.__viewer.vp.span : 0`, &ruler),
	); err != nil {
		t.Fatal(err)
	}
	if ruler < 0.45 || ruler > 0.55 {
		t.Errorf("ruler covers %.3f of the span, want 0.5", ruler)
	}

	// Ctrl+wheel zooms in around the pointer: the time under it stays put.
	xa, y = plotXY(t, ctx, 0.3, 1)
	var before, after string
	err := chromedp.Run(ctx,
		eval(`String(window.__viewer.vp.time(0.3 * window.__viewer.vp.width))`, &before),
		chromedp.MouseEvent(input.MouseWheel, xa, y, func(p *input.DispatchMouseEventParams) *input.DispatchMouseEventParams {
			return p.WithDeltaY(-200).WithModifiers(input.ModifierCtrl)
		}),
		waitJS(`window.__viewer.vp.span < `+ftoa(span2*0.9)),
		eval(`String(window.__viewer.vp.time(0.3 * window.__viewer.vp.width))`, &after),
	)
	if err != nil {
		t.Fatalf("ctrl+wheel: %v", err)
	}
	if d := absDiff(before, after); d > 0.01*span2 {
		t.Errorf("ctrl+wheel moved the time under the pointer from %s to %s", before, after)
	}

	// Shift+click on a track label raises the track, Ctrl+click sinks it.
	var order1, order2 string
	var rows int
	lx, ly := labelXY(t, ctx, 4)
	err = chromedp.Run(ctx,
		eval(`window.__viewer.rows.length`, &rows),
		chromedp.MouseClickXY(lx, ly, chromedp.ButtonModifiers(input.ModifierShift)),
		waitJS(`window.__viewer.order.length > 0`),
		eval(`window.__viewer.rows.slice(0, 2).join(',') + '/' + window.__viewer.selTrack`, &order1),
	)
	if err != nil {
		t.Fatal(err)
	}
	lx, ly = labelXY(t, ctx, 0)
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(lx, ly, chromedp.ButtonModifiers(input.ModifierCtrl)),
		waitJS(`window.__viewer.rows.at(-1) === window.__viewer.selTrack`),
		eval(`window.__viewer.rows.at(-1) + '/' + window.__viewer.selTrack`, &order2),
	)
	if err != nil {
		t.Fatalf("ctrl+click sink: %v", err)
	}
	if !strings.HasPrefix(order1, "4,") || !strings.HasSuffix(order1, "/4") {
		t.Errorf("shift+click on row 4 gave top rows/selection %s, want track 4 first", order1)
	}

	// The overlay lists the mouse bindings the test just used.
	var help string
	chromedp.Run(ctx, eval(`document.getElementById('help').textContent`, &help))
	for _, w := range []string{"Shift+drag", "right drag", "Ctrl/⌘+wheel"} {
		if !strings.Contains(help, w) {
			t.Errorf("help lacks %q", w)
		}
	}
}
