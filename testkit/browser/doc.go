// Package browser drives a headless Chromium (Debian's chromium package)
// for tests of the pages the API serves, through the DevTools protocol
// (chromedp), and keeps their screenshots as artifacts in build/artifacts.
package browser
