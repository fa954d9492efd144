package browser

import (
	"strings"
	"testing"

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
