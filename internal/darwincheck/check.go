package darwincheck

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Options says what to check.
type Options struct {
	// Dir is the module's directory.
	Dir string
	// Arch is the GOARCH to check for (arm64, amd64).
	Arch string
	// Patterns are the packages to check, as go list takes them.
	Patterns []string
	// Overlay replaces or adds files (absolute path → content), as
	// packages.Config.Overlay does.
	Overlay map[string][]byte
}

// Problem is one type error in the module's own code.
type Problem struct {
	Pos     token.Position
	Message string
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s", p.Pos, p.Message) }

// maxProblems bounds what one check reports.
const maxProblems = 200

// Check lists the packages for GOOS=darwin and o.Arch and type-checks them
// with their dependencies; it returns the type errors found in the
// packages of the patterns' module. The error is for a check that could
// not run.
func Check(ctx context.Context, o Options) ([]Problem, error) {
	if o.Arch == "" || len(o.Patterns) == 0 {
		return nil, errors.New("darwincheck: an arch and patterns are needed")
	}
	cfg := &packages.Config{
		Context: ctx,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Dir:     o.Dir,
		Env:     append(os.Environ(), "GOOS=darwin", "GOARCH="+o.Arch, "CGO_ENABLED=1", "GOFLAGS=-mod=mod"),
		Overlay: o.Overlay,
	}
	roots, err := packages.Load(cfg, o.Patterns...)
	if err != nil {
		return nil, fmt.Errorf("darwincheck: list packages: %w", err)
	}
	if len(roots) == 0 {
		return nil, errors.New("darwincheck: the patterns match no package")
	}
	c := &checker{
		fset:    token.NewFileSet(),
		overlay: o.Overlay,
		done:    map[string]*types.Package{},
		sizes:   types.SizesFor("gc", o.Arch),
	}
	for _, p := range roots {
		for _, e := range p.Errors {
			return nil, fmt.Errorf("darwincheck: %s: %s", p.PkgPath, e.Msg)
		}
		if p.Module != nil {
			c.own = append(c.own, p.Module.Path)
		}
	}
	for _, p := range roots {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := c.check(p); err != nil {
			return nil, err
		}
	}
	return c.problems, nil
}

type checker struct {
	fset     *token.FileSet
	overlay  map[string][]byte
	done     map[string]*types.Package
	sizes    types.Sizes
	own      []string
	problems []Problem
}

// isOwn reports whether p belongs to a module being checked.
func (c *checker) isOwn(p *packages.Package) bool {
	return p.Module != nil && slices.Contains(c.own, p.Module.Path)
}

// check type-checks p after its imports (dependencies first, each once).
func (c *checker) check(p *packages.Package) (*types.Package, error) {
	if tp, ok := c.done[p.PkgPath]; ok {
		return tp, nil
	}
	if p.PkgPath == "unsafe" {
		c.done[p.PkgPath] = types.Unsafe
		return types.Unsafe, nil
	}
	for _, imp := range p.Imports {
		if _, err := c.check(imp); err != nil {
			return nil, err
		}
	}
	own := c.isOwn(p)
	files := make([]*ast.File, 0, len(p.GoFiles))
	for _, name := range p.GoFiles {
		src, err := c.source(name)
		if err != nil {
			return nil, err
		}
		mode := parser.SkipObjectResolution
		if own {
			mode |= parser.ParseComments
		}
		f, err := parser.ParseFile(c.fset, name, src, mode)
		if err != nil && own {
			c.report(err)
		}
		if f != nil {
			files = append(files, f)
		}
	}
	conf := types.Config{
		Importer:         importer{c: c, p: p},
		FakeImportC:      true,
		IgnoreFuncBodies: !own,
		Sizes:            c.sizes,
		Error: func(err error) {
			if own {
				c.report(err)
			}
		},
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		conf.GoVersion = "go" + p.Module.GoVersion
	}
	tp, _ := conf.Check(p.PkgPath, c.fset, files, nil) // errors went to conf.Error
	c.done[p.PkgPath] = tp
	return tp, nil
}

func (c *checker) source(name string) ([]byte, error) {
	if b, ok := c.overlay[name]; ok {
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("darwincheck: %w", err)
	}
	return b, nil
}

func (c *checker) report(err error) {
	if len(c.problems) >= maxProblems {
		return
	}
	var te types.Error
	if errors.As(err, &te) {
		c.problems = append(c.problems, Problem{Pos: te.Fset.Position(te.Pos), Message: te.Msg})
		return
	}
	c.problems = append(c.problems, Problem{Message: err.Error()})
}

// importer resolves p's imports to the packages already checked.
type importer struct {
	c *checker
	p *packages.Package
}

func (im importer) Import(path string) (*types.Package, error) {
	dep, ok := im.p.Imports[path]
	if !ok {
		return nil, fmt.Errorf("%s does not import %s in the darwin build", im.p.PkgPath, path)
	}
	if tp := im.c.done[dep.PkgPath]; tp != nil {
		return tp, nil
	}
	return nil, fmt.Errorf("%s: not checked", strings.TrimSpace(dep.PkgPath))
}
