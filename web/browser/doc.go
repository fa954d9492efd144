// Package browser holds the viewer's end-to-end tests: they drive the
// frontend in ui/static through headless Chromium with chromedp. The package
// has no code outside its tests.
//
// The tests need Debian's chromium (apt-get install chromium). Without it
// they skip, except under CI (CI set), where a missing browser fails.
package browser
