// Package browser holds the web UI's and the API explorer's tests in headless
// Chromium (testkit/browser): what a person sees, by screenshots in
// build/artifacts (make unit-vm).
package browser
