package reaper

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pluginFiles are the reaper plugin's own files (reaper/doc.go: a request's
// path): HTTP's side of the port, which could live outside the engine's state.
var pluginFiles = []string{"plugin.go", "config.go", "protocol.go", "answers.go", "wellknown.go",
	"preview.go", "liveevents.go", "progress.go", "heldrequest.go", "resend.go"}

// adminFiles are the admin API's (reaper/doc.go: what operators are told).
// admingroups.go is not among them: beside the group pages it keeps an engine
// method (Engine.Wake); its *AdminAPI methods are checked all the same.
var adminFiles = []string{"admin.go", "adminactions.go", "adminreap.go", "adminwatch.go", "adminwire.go", "savings.go"}

// The reaper plugin reaches the engine only through its exported calls (the
// port: Engine.ClaimWith, Route, Engine.Options…), never through the engine's
// or the app's unexported state: every method of *Plugin, and every function
// of its files, selects only exported names of an *Engine or a *Route, and
// its files declare no method of the engine's types.
func TestPlugin_ReachesTheEngineOnlyThroughItsExportedCalls(t *testing.T) {
	if n := checkPort(t, pluginFiles, "Plugin"); n < 40 {
		t.Fatalf("checked %d functions of the plugin; the file list (pluginFiles) is out of date", n)
	}
}

// The admin API reads and acts through the engine's exported calls (the
// port's read side, its operators' side: portoperator.go), as the plugin
// does.
func TestAdminAPI_ReachesTheEngineOnlyThroughItsExportedCalls(t *testing.T) {
	if n := checkPort(t, adminFiles, "AdminAPI"); n < 25 {
		t.Fatalf("checked %d functions of the admin API; the file list (adminFiles) is out of date", n)
	}
}

// checkPort checks the methods of recv and the functions of files, and
// returns how many it checked.
func checkPort(t *testing.T, files []string, recv string) int {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		inFiles := contains(files, name)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			r := receiverType(fn)
			if inFiles && (r == "Engine" || r == "app" || r == "holds" || r == "wakeAsks") {
				t.Errorf("%s: %s is a method of the engine's %s in a file of the %s", fset.Position(fn.Pos()), fn.Name.Name, r, recv)
			}
			if r != recv && !inFiles {
				continue
			}
			checked++
			for _, bad := range portLeaks(fn) {
				t.Errorf("%s: %s reaches into the engine (%s): only exported calls of *Engine and *Route", fset.Position(bad.Pos()), fn.Name.Name, bad.Sel.Name)
			}
		}
	}
	return checked
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// receiverType is the name of fn's receiver type, "" for a function.
func receiverType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// portLeaks returns the selections of unexported names on the engine's side in
// fn: on p.engine and p.route (the plugin's fields), a.Engine (the admin
// API's), on parameters of type *Engine, *Route or *app, and on variables
// bound to any of these.
func portLeaks(fn *ast.FuncDecl) []*ast.SelectorExpr {
	bound := map[string]bool{}
	for _, fl := range []*ast.FieldList{fn.Recv, fn.Type.Params} {
		if fl == nil {
			continue
		}
		for _, f := range fl.List {
			if s, ok := f.Type.(*ast.StarExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && (id.Name == "Engine" || id.Name == "Route" || id.Name == "app") {
					for _, n := range f.Names {
						bound[n.Name] = true
					}
				}
			}
		}
	}
	onPort := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return bound[x.Name]
		case *ast.SelectorExpr:
			return x.Sel.Name == "engine" || x.Sel.Name == "route" || x.Sel.Name == "Engine"
		}
		return false
	}
	var leaks []*ast.SelectorExpr
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			for i, rhs := range x.Rhs {
				if id, ok := x.Lhs[min(i, len(x.Lhs)-1)].(*ast.Ident); ok && onPort(rhs) {
					bound[id.Name] = true
				}
			}
		case *ast.SelectorExpr:
			if onPort(x.X) && !x.Sel.IsExported() {
				leaks = append(leaks, x)
			}
		}
		return true
	})
	return leaks
}
