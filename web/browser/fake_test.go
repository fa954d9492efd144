package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The frontend on its own: dev.html draws a trace generated in the browser.

func TestFakeDraws(t *testing.T) {
	checkDraws(t, tab(t), staticServer(t).URL+"/dev.html", "fake-draws")
}

func TestFakeKeysMoveView(t *testing.T) {
	checkKeysMoveView(t, tab(t), staticServer(t).URL+"/dev.html")
}

func TestFakeClickShowsDetails(t *testing.T) {
	checkClickDetails(t, tab(t), staticServer(t).URL+"/dev.html",
		[]string{"datum", "<b>not html</b>", "Stack", "coreclr!GCHeap::Alloc", "ActivityId", "Raw bytes"})
}

func TestFakeReloadRestores(t *testing.T) {
	checkReload(t, tab(t), tab(t), staticServer(t).URL+"/dev.html")
}

func TestFakeSearchNext(t *testing.T) {
	// ExceptionThrown among each track's first 40 events.
	checkSearchNext(t, tab(t), staticServer(t).URL+"/dev.html", "#80 && index<40")
}

// TestFakeHelpOverlay opens the key list with ? and closes it with Escape.
func TestFakeHelpOverlay(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var open, closed bool
	var text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("?"),
		eval(`!document.getElementById('help').hidden`, &open),
		eval(`document.getElementById('help').textContent`, &text),
		chromedp.KeyEvent(kb.Escape),
		eval(`document.getElementById('help').hidden`, &closed),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !open || !closed {
		t.Errorf("help overlay open=%v closed after Esc=%v", open, closed)
	}
	for _, want := range []string{"zoom in", "chase", "Shift+drag"} {
		if !strings.Contains(text, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestFakeKeyboardPanels drives the track filter, the event-type selector
// and chase from the keyboard alone.
func TestFakeKeyboardPanels(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var rows int
	var url string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		// L focuses the track filter (CDP then types the "l" into it: clear it).
		chromedp.KeyEvent("l"),
		waitJS(`document.activeElement.id === 'track-filter' && document.getElementById('track-filter').value === 'l'`),
		eval(`document.getElementById('track-filter').value = ''`, nil),
		chromedp.KeyEvent("worker"),
		waitJS(`window.__viewer.rows.length > 0 && window.__viewer.rows.length < 20`),
		eval(`window.__viewer.rows.length`, &rows),
		chromedp.Sleep(300*time.Millisecond), // the URL follows the filter after a pause
		eval(`location.search`, &url),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(url, "f=worker") {
		t.Errorf("filter %d rows, URL %q lacks f=worker", rows, url)
	}

	// Y focuses ALL; Tab moves to NONE; Enter hides every type.
	var painted, after int
	var xt string
	err = chromedp.Run(ctx,
		chromedp.KeyEvent(kb.Escape),
		chromedp.KeyEvent("y"),
		waitJS(`document.activeElement.id === 'types-all'`),
		chromedp.KeyEvent("\t"),
		waitJS(`document.activeElement.id === 'types-none'`),
		chromedp.KeyEvent("\r"),
		waitJS(`window.__viewer.hideTypes.size === window.__viewer.meta.types.length`),
		eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))`, nil),
		eval(paintedPixels, &painted),
		eval(`location.search`, &xt),
		chromedp.Focus("#types-all", chromedp.ByID),
		chromedp.KeyEvent("\r"),
		waitJS(`window.__viewer.hideTypes.size === 0`),
		eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))`, nil),
		eval(paintedPixels, &after),
	)
	if err != nil {
		t.Fatal(err)
	}
	if painted > 200 || after < 2000 || !strings.Contains(xt, "xt=0-12") {
		t.Errorf("NONE left %d glyph pixels (URL %q), ALL drew %d", painted, xt, after)
	}

	// Chase: select an event from the keyboard, M reorders the tracks.
	var order, url2 string
	err = chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.ArrowRight),
		waitJS(`window.__viewer.details !== null`),
		chromedp.KeyEvent("m"),
		waitJS(`window.__viewer.order.length > 0`),
		eval(`window.__viewer.order.join(',')`, &order),
		eval(`location.search`, &url2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(url2, "order="+order) {
		t.Errorf("chase order %s not in URL %q", order, url2)
	}
}
