package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// complete asks herdr-pi for the candidates of the last of args, as the
// completion scripts do, and returns them; completing says nothing on
// stderr and exits 0 whatever it finds.
func complete(t *testing.T, env []string, cwd string, args ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	io := IO{In: strings.NewReader(""), Out: &out, Err: &errb, Dir: cwd, Env: env}
	code := Main(context.Background(), append(append([]string{"herdr-pi"}, args...), completionFlag), io)
	if code != exitOK || errb.Len() != 0 {
		t.Fatalf("completing %q: exit %d, stderr %q", args, code, errb.String())
	}
	return strings.Fields(out.String())
}

// open and close complete the runs of the workflow store (their refs, the
// shortest prefixes that name them from anywhere) and open an attempt of
// the run given (what --list's selector column says), from the store on
// disk. A name the store holds that a shell could not take as one plain
// word (a space, "$(…)", which bash's compgen -W would run) is never
// offered; neither is anything after the words a command takes.
func TestOpenAndCloseCompleteRunsAndAttempts(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	st := store.New(ls.Home, ls.Cwd)
	refs, err := st.ShortIDs()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ref := range refs {
		want = append(want, ref)
	}
	slices.Sort(want)
	for _, args := range [][]string{{"open", ""}, {"close", ""}, {"open", "--list", ""}, {"open", "--inspect", ""}} {
		if got := complete(t, env, ls.Cwd, args...); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want the runs' refs %q", args, got, want)
		}
	}
	ref := refs[ls.IDs[1]]
	if got := complete(t, env, ls.Cwd, "open", ref[:3]); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return !strings.HasPrefix(s, ref[:3]) }) {
		t.Errorf("open %s<TAB>: %q, want the refs that start with it", ref[:3], got)
	}

	// The run's attempts, as open --list names them.
	r, err := st.FindRun(ls.IDs[1])
	if err != nil {
		t.Fatal(err)
	}
	var attempts []string
	for _, a := range r.Attempts() {
		attempts = append(attempts, a.Name())
	}
	got := complete(t, env, ls.Cwd, "open", ref, "")
	if len(got) == 0 || !slices.Equal(got, attempts) {
		t.Errorf("open %s <TAB>: %q, want %q", ref, got, attempts)
	}
	if got := complete(t, env, ls.Cwd, "open", "--inspect", ref, "do"); !slices.Equal(got, []string{"docs#1"}) {
		t.Errorf("open --inspect %s do<TAB>: %q, want docs#1", ref, got)
	}
	for _, args := range [][]string{{"open", ref, "docs", ""}, {"close", ref, ""}, {"open", "--list", ref, ""}, {"open", "nosuchrun", ""}} {
		if got := complete(t, env, ls.Cwd, args...); len(got) != 0 {
			t.Errorf("%q: %q, want nothing", args, got)
		}
	}

	// Names a shell would run or split are left out.
	state := filepath.Join(r.Dir, "state.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"name":"docs"`), []byte(`"name":"$(touch pwned)"`))
	b = bytes.ReplaceAll(b, []byte(`"name":"api"`), []byte(`"name":"two words"`))
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got = complete(t, env, ls.Cwd, "open", ref, "")
	if len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return strings.ContainsAny(s, "$( ") || s == "two" || s == "words#1" }) {
		t.Errorf("open %s <TAB> with hostile names: %q", ref, got)
	}
}
