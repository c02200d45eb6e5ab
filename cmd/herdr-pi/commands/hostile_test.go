package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// hostile is text that would act on a terminal printed raw: an OSC that
// retitles the window, colour, a screen clear, the one-byte C1 CSI and a
// right-to-left override. PWNED is the part that must still show.
const hostile = "\x1b]0;PWNED\a\x1b[31mRED\x1b[2J\u009b1m\u202eevil"

// harmless fails t when out holds anything a terminal would act on or
// reorder by — a control character other than a newline, a bidi control,
// an invalid byte — and when it lacks PWNED, which shows the hostile text
// did reach the output, cleaned, and the test looked at the right thing.
func harmless(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, "PWNED") {
		t.Errorf("%s: the hostile text never reached the output, so this proves nothing:\n%q", what, out)
	}
	for i, r := range out {
		bad := r != '\n' && unicode.IsControl(r) || r == 0x202e || r == 0x2066 || r == 0x200f
		if r == utf8.RuneError {
			_, size := utf8.DecodeRuneInString(out[i:])
			bad = size == 1
		}
		if bad {
			t.Errorf("%s: %U at byte %d reaches the terminal:\n%q", what, r, i, out)
			return
		}
	}
}

// Herdr's words — its version, an error message — are shown on doctor's
// rows cleaned, whoever answers on the socket.
func TestDoctorShowsHerdrsWordsHarmlessly(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Version: "0.8.0" + hostile})
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.get"},
		Reply: map[string]any{"error": map[string]string{"code": "internal_error", "message": "bad " + hostile}}})
	w := doctortest.New(t).Healthy().Set(s.Env()...)
	code, out, errOut := runDoctor(w, "herdr")
	if code != 1 || errOut != "" {
		t.Errorf("exit %d, want 1 (the pane row fails); stderr %q", code, errOut)
	}
	harmless(t, "doctor herdr", out)
	for _, want := range []string{"Herdr 0.8.0 ]0;PWNED  [31mRED [2J 1m evil speaks protocol 20", "refused pane.get: bad  ]0;PWNED"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}

// A toast Herdr refuses with a hostile message, or answers with a hostile
// reason, ends notify with an error that is printed cleaned.
func TestNotifyShowsHerdrsWordsHarmlessly(t *testing.T) {
	for name, reply := range map[string]map[string]any{
		"reason":        {"result": map[string]any{"type": "notification_show", "shown": false, "reason": "disabled" + hostile}},
		"error message": {"error": map[string]string{"code": "invalid_params", "message": "bad " + hostile}},
	} {
		t.Run(name, func(t *testing.T) {
			s := herdrtest.Start(t)
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"notification.show"}, Reply: reply})
			var out, errb bytes.Buffer
			env := append([]string{"HOME=" + t.TempDir(), "HERDR_PI_LOG=off"}, s.Env()...)
			code := Main(context.Background(), []string{"herdr-pi", "notify", "--title", "hi"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env})
			if code != 1 || !strings.HasPrefix(errb.String(), "herdr-pi notify: not delivered: herdr: ") {
				t.Fatalf("exit %d, want 1 and the reason; stderr %q", code, errb.String())
			}
			harmless(t, "notify's error", errb.String())
		})
	}
}

// An agent named with escapes in the workflow store is listed cleaned in
// the error of an attempt that does not exist.
func TestOpenNamesStoreAttemptsHarmlessly(t *testing.T) {
	home := t.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 1, AgentsPerRun: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.New(home, g.Cwd).FindRun(g.IDs[0])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.Dir, "state.json")
	data, _ := os.ReadFile(path)
	evil, _ := json.Marshal("a" + hostile)
	changed := bytes.ReplaceAll(data, []byte(`"name":"api"`), append([]byte(`"name":`), evil...))
	if bytes.Equal(changed, data) {
		t.Fatal("the fixture did not take: no agent named api")
	}
	if err := os.WriteFile(path, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := []string{"HOME=" + home, "HERDR_PI_LOG=off", "XDG_CONFIG_HOME=" + home}
	code := Main(context.Background(), []string{"herdr-pi", "open", g.IDs[0], "nobody"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env, Dir: g.Cwd})
	if code != 1 || !strings.Contains(errb.String(), "(attempts: ") {
		t.Fatalf("exit %d, want 1 and the attempts; stderr %q", code, errb.String())
	}
	harmless(t, "open's error", errb.String())

	// --json keeps the name exact for a script, and is still harmless when
	// a person runs it without one: what a terminal would act on is
	// written as a \u escape, C1 and bidi controls included.
	out.Reset()
	errb.Reset()
	code = Main(context.Background(), []string{"herdr-pi", "open", "--list", "--json", g.IDs[0]}, IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env, Dir: g.Cwd})
	if code != 0 {
		t.Fatalf("open --list --json: exit %d; stderr %q", code, errb.String())
	}
	harmless(t, "open --list --json", out.String())
	var listing struct {
		Runs []struct {
			Agents []struct {
				Name string `json:"name"`
			} `json:"agents"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &listing); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range listing.Runs {
		for _, a := range r.Agents {
			names = append(names, a.Name)
		}
	}
	if !slices.Contains(names, "a"+hostile) {
		t.Errorf("open --list --json names %q; want the agent's name exactly, %q", names, "a"+hostile)
	}
}

// A detection manifest is a file the person installed, perhaps from
// elsewhere: its id, its rules' ids and the manifest's own file name are
// shown by detect cleaned, the verdict line and every contender's line
// alike.
func TestDetectShowsAManifestsWordsHarmlessly(t *testing.T) {
	dir := t.TempDir()
	evil, _ := json.Marshal("PWNED" + hostile) // a TOML basic string takes JSON's escapes
	manifest := filepath.Join(dir, "m"+hostile+".toml")
	text := "id = " + string(evil) + "\nversion = \"1\"\nmin_engine_version = 3\n" +
		"[[rules]]\nid = " + string(evil) + "\nstate = \"idle\"\nregion = \"whole_recent\"\ncontains = [\"done\"]\n" +
		"[[rules]]\nid = \"other" + strings.TrimPrefix(string(evil), "\"") + "\nstate = \"blocked\"\nregion = \"whole_recent\"\ncontains = [\"never\"]\n"
	screen := filepath.Join(dir, "screen.txt")
	for path, data := range map[string]string{manifest: text, screen: "all done\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"herdr-pi", "detect", "--manifest", manifest, screen},
		IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}})
	if code != 0 {
		t.Fatalf("detect: exit %d; stderr %q", code, errb.String())
	}
	harmless(t, "detect", out.String())
	if !strings.Contains(out.String(), "other") {
		t.Errorf("detect does not show the other rule, so this proves nothing for it:\n%s", out.String())
	}
}
