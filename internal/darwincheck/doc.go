// Package darwincheck type-checks the module's darwin build on any host.
//
// svc's macOS driver calls Apple's Virtualization framework through
// github.com/Code-Hex/vz/v3, a cgo package that only a Mac can compile. What
// can be proven elsewhere is that svc's own darwin files use vz's API
// correctly: packages are listed for GOOS=darwin (file lists only, no cgo
// run, through golang.org/x/tools/go/packages) and type-checked with
// go/types, Config.FakeImportC standing in for cgo. Dependencies are
// checked without their function bodies and their errors are ignored
// (packages that import "C" themselves give false ones); every error in
// the module's own packages is reported.
package darwincheck
