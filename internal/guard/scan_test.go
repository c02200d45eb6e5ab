package guard

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unguarded are the goroutine starts in herdr-pi's own code that run
// without guard, by file and enclosing function, with how many there are
// and why a panic cannot start there or is handled otherwise.
var unguarded = map[string]struct {
	n   int
	why string
}{
	"pane/pty/run.go Run":                                {2, "the waiter and the signal forwarder recover into the run loop (recoverInto), which restores the terminal; the copy loop stays free of per-chunk guards"},
	"pane/pty/leader/leader.go run":                      {1, "runs in the session leader process, not the wrapper: its end is the agent's exit status"},
	"pane/screen/screen.go (*Screen).build":              {1, "io.Copy from the emulator's io.Pipe into io.Discard: no code of ours or the emulator's runs there"},
	"pane/state/state.go (realClock).AfterFunc":          {1, "the Clock itself: its callers hand it guarded functions (Machine.arm)"},
	"notify/notifier.go (*Notifier).Close":               {1, "waits on a WaitGroup and closes a channel"},
	"bridge/herdr/reporter.go (*Reporter).kickLocked":    {1, "run recovers itself: it repairs the Reporter's state under its lock and logs the panic once"},
	"bridge/herdr/reporter.go (*Reporter).Release":       {2, "a cancel of the send in flight"},
	"bridge/herdr/client.go (*Client).once":              {1, "sets a deadline"},
	"bridge/herdr/watch.go (*Watcher).stream":            {1, "sets a deadline"},
	"bridge/control/server.go (*Server).track":           {1, "takes a lock and broadcasts"},
	"bridge/control/handoff_stream.go (*Client).Handoff": {1, "the asker's side (herdr-pi open), not the wrapper: a send and a deadline"},
	"bridge/tools/server.go (*Server).run":               {1, "a read, a log line and a cancel"},
	"handoff/live/agent.go (*paneAgent).watch":           {1, "polls the pane's Pi's pidfd (or its wrapper's lock) and closes a channel"},
	"handoff/wait.go WatchWrapper":                       {1, "polls a run directory's lock and closes a channel"},
	"handoff/live/service.go (*Service).handoff":         {1, "a cancel"},
	"handoff/live/carry.go (*Service).carry":             {1, "a cancel (herdr-pi close gave the pending handoff up)"},
	"handoff/live/service.go (*Service).startLocked":     {1, "a select and a cancel"},
	"handoff/store/store.go (*Store).Runs":               {1, "decodes runs for `herdr-pi open`'s listing, not for wrap"},
}

// skipped are directories whose code never runs in a wrapper: tests and
// their helpers, the demo, and what only doctor and open's picker run.
var skipped = []string{".ci", ".git", "e2e", "testdata", "node_modules", "internal/testenv", "internal/fakellm", "internal/golden",
	"cmd/herdr-pi/internal/demo", "cmd/herdr-pi/internal/doctor", "cmd/herdr-pi/internal/picker"}

// Every goroutine herdr-pi starts — go, a WaitGroup's Go, an AfterFunc's
// callback — runs under guard, or is listed in unguarded with the reason:
// a panic escaping any goroutine but wrap's kills the wrapper before its
// way out gives the terminal back. A start counts as guarded when its
// function is guard.Func(...) or a literal that calls guard (Run, Go or
// Func) somewhere: this test finds new starts, review judges the rest.
func TestEveryGoroutineIsGuarded(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	found := map[string]int{}
	var bad []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(skipped, rel) || slices.Contains(skipped, d.Name()) || strings.HasSuffix(d.Name(), "test") || rel == "internal/guard" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := rel + " " + funcName(fd)
			for _, start := range starts(fd.Body) {
				if guarded(start.fn) {
					continue
				}
				if _, ok := unguarded[key]; ok {
					found[key]++
					continue
				}
				bad = append(bad, fmt.Sprintf("%s: %s outside guard (in %s)", fset.Position(start.pos), start.kind, funcName(fd)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: wrap it in guard.Go, guard.Run or guard.Func, or list it in unguarded with the reason", b)
	}
	for key, want := range unguarded {
		if found[key] != want.n {
			t.Errorf("unguarded lists %d starts in %s, found %d: update the list", want.n, key, found[key])
		}
	}
}

type start struct {
	pos  token.Pos
	kind string
	fn   ast.Expr // the function the goroutine runs
}

// starts finds the goroutine starts in body: go statements, X.Go(f) and
// X.AfterFunc(…, f).
func starts(body *ast.BlockStmt) []start {
	var out []start
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
				out = append(out, start{n.Pos(), "go", lit})
			} else {
				out = append(out, start{n.Pos(), "go", n.Call})
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) == 0 || isGuard(sel) {
				return true
			}
			switch sel.Sel.Name {
			case "Go":
				out = append(out, start{n.Pos(), "Go", n.Args[0]})
			case "AfterFunc":
				out = append(out, start{n.Pos(), "AfterFunc", n.Args[len(n.Args)-1]})
			}
		}
		return true
	})
	return out
}

// guarded: fn is guard.Func(…), or a literal that calls guard.
func guarded(fn ast.Expr) bool {
	if call, ok := fn.(*ast.CallExpr); ok {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && isGuard(sel) && sel.Sel.Name == "Func"
	}
	lit, ok := fn.(*ast.FuncLit)
	if !ok {
		return false
	}
	calls := false
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isGuard(sel) {
				calls = true
			}
		}
		return !calls
	})
	return calls
}

func isGuard(sel *ast.SelectorExpr) bool {
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "guard"
}

// funcName is "F" or "(T).M" / "(*T).M".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	var recv string
	switch t := fd.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		recv = "*" + exprName(t.X)
	default:
		recv = exprName(t)
	}
	return "(" + recv + ")." + fd.Name.Name
}

func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return exprName(e.X)
	}
	return "?"
}
