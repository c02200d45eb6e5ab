package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/tmux/tmuxtest"
)

func TestDoctorJSONMatchesItsDocumentedSchema(t *testing.T) {
	schema := compileSchema(t, "doctor")
	s := herdrtest.Start(t)
	for _, tc := range []struct {
		name  string
		herdr []string
		code  int
	}{
		{"inside the fake", s.Env(), 0},
		{"socket pointing nowhere", append(s.Env(), "HERDR_SOCKET_PATH=/nonexistent/herdr.sock"), 1},
		{"outside Herdr", nil, 0},
		{"incomplete", []string{"HERDR_ENV=1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t).Healthy().Set(tc.herdr...)
			code, out, errOut := runDoctor(w, "--json")
			if code != tc.code || errOut != "" {
				t.Errorf("exit %d, want %d; stderr %q\n%s", code, tc.code, errOut, out)
			}
			validate(t, schema, out)
			var rep doctor.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			counts := doctor.Count(rep.Checks)
			if rep.OK != (tc.code == 0) || rep.Counts[doctor.Fail] != counts[doctor.Fail] || rep.Counts[doctor.OK] != counts[doctor.OK] || rep.Counts[doctor.Warn] != counts[doctor.Warn] {
				t.Errorf("ok=%v counts=%v, rows count %v", rep.OK, rep.Counts, counts)
			}
			var sections []string
			for _, r := range rep.Checks {
				if len(sections) == 0 || sections[len(sections)-1] != r.Section {
					sections = append(sections, r.Section)
				}
			}
			if got := strings.Join(sections, " "); got != "herdr pi config notify runtime" {
				t.Errorf("sections %q, want every section once, in order", got)
			}
		})
	}
	if n := len(s.Requests()); n == 0 {
		t.Error("doctor never asked the fake anything")
	}
	t.Run("the documented example", func(t *testing.T) { validate(t, schema, docExample(t, "doctor")) })
}

func TestDoctorNamesTheMissingSocketAndTheFix(t *testing.T) {
	w := doctortest.New(t).Set("HERDR_ENV=1", "HERDR_PANE_ID=w1:p1", "HERDR_SOCKET_PATH=/nonexistent/dir/herdr.sock")
	code, out, _ := runDoctor(w, "herdr")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"fail  socket", "/nonexistent/dir/herdr.sock does not exist", "fix: start Herdr"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A Herdr that never answers, closes without answering or answers
// garbage is a failed socket row that says so; its detail does not tell
// the person to run herdr-pi doctor, which is what they are doing. The
// other commands' errors keep that advice.
func TestDoctorDoesNotAdviseRunningDoctor(t *testing.T) {
	s := herdrtest.Start(t)
	for _, tc := range []struct {
		fault herdrtest.FaultKind
		says  string
	}{
		{herdrtest.FaultHang, "no reply to ping within 1.5s: Herdr is busy or hung"},
		{herdrtest.FaultClose, "Herdr closed the connection without answering ping"},
		{herdrtest.FaultGarbage, "is HERDR_SOCKET_PATH another program's socket?"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			s.SetFault(herdrtest.Fault{Kind: tc.fault})
			defer s.SetFault(herdrtest.Fault{})
			w := doctortest.New(t).Healthy().Set(s.Env()...)
			code, out, _ := runDoctor(w, "herdr")
			if code != 1 || !strings.Contains(out, "fail  socket") || !strings.Contains(out, tc.says) {
				t.Errorf("exit %d, want 1 and a failed socket row saying %q:\n%s", code, tc.says, out)
			}
			if strings.Contains(out, "run 'herdr-pi doctor'") {
				t.Errorf("doctor advises running doctor:\n%s", out)
			}
		})
	}
}

// doctor --json stopped by a signal still prints one object: no rows (they
// would say what an interrupted check could not find out), an error with
// code interrupted, in the documented schema; stderr says it as without
// --json and the exit status stays 130. A cancelled context is what the
// signal makes of doctor's own.
func TestDoctorJSONInterruptedPrintsTheFailureObject(t *testing.T) {
	schema := compileSchema(t, "doctor")
	w := doctortest.New(t).Healthy()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	exit := Main(ctx, []string{"herdr-pi", "doctor", "--json", "runtime"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: w.Env()})
	if exit != exitInterrupted || errb.String() != "herdr-pi doctor: interrupted\n" {
		t.Errorf("exit %d, stderr %q; want 130 and the words", exit, errb.String())
	}
	validate(t, schema, out.String())
	var got struct {
		Format string
		Checks []doctor.Row
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Format != doctor.Format || got.Error.Code != "interrupted" || got.Error.Message == "" || got.Checks != nil {
		t.Errorf("stdout %q (%v); want format %s, code interrupted, no rows", out.String(), err, doctor.Format)
	}
	for _, doc := range docExamples(t, "doctor") {
		validate(t, schema, doc)
	}
}

func TestDoctorSectionArguments(t *testing.T) {
	w := doctortest.New(t).Healthy()
	code, out, _ := runDoctor(w, "runtime", "config")
	if code != 0 || !strings.HasPrefix(out, "Configuration\n") || !strings.Contains(out, "\nRuntime\n") || strings.Contains(out, "Herdr\n") {
		t.Errorf("doctor runtime config: exit %d\n%s", code, out)
	}
	code, _, errOut := runDoctor(w, "plumbing")
	if code != 2 || !strings.Contains(errOut, `no section "plumbing" (sections: herdr, pi, config, notify, runtime)`) {
		t.Errorf("unknown section: exit %d, %q", code, errOut)
	}
}

// BenchmarkDoctor is the whole doctor on a healthy machine (the issue
// asked for about 3 s; timing belongs here, not in a test's assertion).
func BenchmarkDoctor(b *testing.B) {
	w := doctortest.New(b).Healthy()
	for b.Loop() {
		if code, out, _ := runDoctor(w); code != 0 {
			b.Fatalf("exit %d\n%s", code, out)
		}
	}
}

// Inside tmux, doctor asks the real tmux server whether it lets
// notification sequences out.
func TestDoctorTmuxPassthroughRow(t *testing.T) {
	srv := tmuxtest.New(t, "set -g allow-passthrough off\n")
	srv.Tmux(t, "new-session", "-d", "-s", "doc", "-x", "80", "-y", "24", "sleep 60")
	pane := strings.TrimSpace(srv.Tmux(t, "display-message", "-p", "-t", "doc", "#{pane_id}"))
	pid := strings.TrimSpace(srv.Tmux(t, "display-message", "-p", "-t", "doc", "#{pid}"))
	w := doctortest.New(t).Set("TMUX="+srv.Socket+","+pid+",0", "TMUX_PANE="+pane)
	row := func() doctor.Row {
		t.Helper()
		for _, r := range doctor.Run(t.Context(), doctorInput(NewFactory(IO{Env: w.Env()})), doctor.Pick([]string{"notify"})) {
			if r.Name == "tmux passthrough" {
				return r
			}
		}
		t.Fatal("no tmux passthrough row")
		return doctor.Row{}
	}
	if r := row(); r.Status != doctor.Fail || !strings.Contains(r.Detail, "tmux server "+srv.Socket+", pane "+pane+": allow-passthrough is off, so tmux drops the notification sequences and notifications will not show") || !strings.HasPrefix(r.Fix, "run `tmux set -g allow-passthrough on`") {
		t.Errorf("passthrough off: %+v", r)
	}
	srv.Tmux(t, "set", "-g", "allow-passthrough", "on")
	if r := row(); r.Status != doctor.OK || !strings.Contains(r.Detail, "allow-passthrough is on") {
		t.Errorf("passthrough on: %+v", r)
	}
}

func runDoctor(w *doctortest.World, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"herdr-pi", "doctor"}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: w.Env()})
	return code, out.String(), errb.String()
}

// docExamples are the ```json blocks of docs/<page>.md in the command's
// format (herdr-pi.<page>/1): the report and the failure objects the page
// shows, not the other JSON it quotes (detect's trace lines).
func docExamples(t testing.TB, page string) []string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", page+".md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for rest := string(md); ; {
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```json\n"); !ok {
			break
		}
		var block string
		if block, rest, ok = strings.Cut(rest, "```"); !ok {
			t.Fatalf("docs/%s.md: a json example is not closed", page)
		}
		if strings.HasPrefix(block, "{\n  \"format\": \"herdr-pi."+page+"/1\"") {
			blocks = append(blocks, block)
		}
	}
	if len(blocks) < 2 {
		t.Fatalf("docs/%s.md has %d json examples, want the report and a failure", page, len(blocks))
	}
	return blocks
}

// compileSchema compiles docs/<name>.schema.json, the file the docs link
// to, with formats (date-time) asserted.
func compileSchema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join("..", "..", "..", "docs", name+".schema.json"))
	if err != nil {
		t.Fatalf("docs/%s.schema.json: %v", name, err)
	}
	return s
}

// validate checks a JSON document against a schema.
func validate(t testing.TB, s *jsonschema.Schema, doc string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("does not match its schema: %v\n%s", err, doc)
	}
}

// docExample is the first ```json block of docs/<page>.md.
func docExample(t testing.TB, page string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", page+".md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(md), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("docs/%s.md has no json example", page)
	}
	return block
}

// A config file HERDR_PI_CONFIG names and that does not exist (a typo, a
// file moved away) is a problem every command says, not "no config": the
// person asked for those settings and would otherwise run without them
// unawares. The default config.toml missing stays the silent "defaults".
func TestAConfigFileHERDRPICONFIGNamesMustExist(t *testing.T) {
	w := doctortest.New(t).Healthy()
	typo := filepath.Join(t.TempDir(), "confg.toml")
	w.Set("HERDR_PI_CONFIG=" + typo)
	says := typo + ": does not exist, and HERDR_PI_CONFIG names it"

	code, out, _ := runDoctor(w, "config")
	if code != 0 || !strings.Contains(out, "warn  config.toml  "+says) {
		t.Errorf("doctor config: exit %d; want 0 and a warning that %s\n%s", code, says, out)
	}
	var stdout, stderr bytes.Buffer
	code = Main(context.Background(), []string{"herdr-pi", "detect", "-"},
		IO{In: strings.NewReader("x\n"), Out: &stdout, Err: &stderr, Env: w.Env()})
	if code != 0 || !strings.Contains(stderr.String(), "config problems, running with the defaults until they are fixed (herdr-pi doctor config checks the file; docs/configuration.md lists every key):\n  "+says) {
		t.Errorf("detect: exit %d, stderr %q; want 0 and %q", code, stderr.String(), says)
	}

	w.Set("HERDR_PI_CONFIG=")
	code, out, _ = runDoctor(w, "config")
	if code != 0 || !strings.Contains(out, "ok    config.toml  ~/.config/herdr-pi/config.toml does not exist: the built-in defaults apply") {
		t.Errorf("doctor config without HERDR_PI_CONFIG: exit %d\n%s", code, out)
	}
}

// Herdr's version string is Herdr's text, clipped and cleaned as its
// error messages are (bridge/herdr): a ping answering a 2 KiB version with
// an escape sequence in it gave a protocol row of 2 KiB that retitled the
// window through --json consumers that print the detail.
func TestDoctorClipsHerdrsVersion(t *testing.T) {
	version := "0.8.0-" + strings.Repeat("x", 2000) + "\x1b]0;owned\x07"
	for _, protocol := range []int{0, 19} {
		s := herdrtest.Start(t, herdrtest.Options{Version: version, Protocol: protocol})
		w := doctortest.New(t).Healthy().Set(s.Env()...)
		_, out, _ := runDoctor(w, "herdr", "--json")
		var rep doctor.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var row *doctor.Row
		for i := range rep.Checks {
			if rep.Checks[i].Name == "protocol" {
				row = &rep.Checks[i]
			}
		}
		if row == nil {
			t.Fatalf("no protocol row:\n%s", out)
		}
		if len(row.Detail) > 300 || strings.ContainsAny(row.Detail, "\x1b\x07") || !strings.Contains(row.Detail, "Herdr 0.8.0-xxx") || !strings.Contains(row.Detail, fmt.Sprintf("(%d bytes)", len(version))) {
			t.Errorf("protocol %d: detail of %d bytes, want Herdr's version clipped, cleaned and its length said:\n%q", protocol, len(row.Detail), row.Detail)
		}
	}
}

// The pane row shows Herdr's text too (the pane's agent, status and tab):
// clipped and cleaned as the version is, so a Herdr that answers with a
// long or hostile agent label cannot fill doctor's report or act on a
// terminal that prints the --json detail.
func TestDoctorClipsHerdrsPaneText(t *testing.T) {
	s := herdrtest.Start(t)
	long := "pi-" + strings.Repeat("x", 2000) + "\x1b]0;owned\x07"
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.get"}, Reply: map[string]any{"result": map[string]any{
		"type": "pane_info",
		"pane": map[string]any{"pane_id": "w1:p1", "terminal_id": "t1", "workspace_id": "w1", "tab_id": "w1:t1", "focused": true,
			"agent_status": "idle\x1b[2J", "revision": 1, "agent": long},
	}}})
	w := doctortest.New(t).Healthy().Set(s.Env()...)
	_, out, _ := runDoctor(w, "herdr", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range rep.Checks {
		if r.Name != "pane" {
			continue
		}
		if len(r.Detail) > 300 || strings.ContainsAny(r.Detail, "\x1b\x07") || !strings.Contains(r.Detail, "agent pi-xxx") || !strings.Contains(r.Detail, fmt.Sprintf("(%d bytes)", len(long))) {
			t.Errorf("pane row of %d bytes, want Herdr's text clipped, cleaned and its length said:\n%q", len(r.Detail), r.Detail)
		}
		return
	}
	t.Fatalf("no pane row:\n%s", out)
}

// A key set twice is named clipped, as every key in a config message is:
// quoted whole, a key of some 160 bytes pushed the message past the
// parser's 200-byte cut, and the row lost its lines and its "keep one".
func TestDoctorKeepsTheFixOfALongKeySetTwice(t *testing.T) {
	w := doctortest.New(t).Healthy()
	key := strings.Repeat("k", 170)
	w.File(".config/herdr-pi/config.toml", "[notify]\n"+key+" = 1\n"+key+" = 2\n", 0o600)
	code, out, _ := runDoctor(w, "config")
	want := `config.toml:3: "notify.` + strings.Repeat("k", 73) + `"… (177 bytes) is set twice (lines 2 and 3); keep one`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("doctor config: exit %d; want 0 and %s\n%s", code, want, out)
	}
}

// A file herdr-pi may not read has one way out, and doctor's detail, its
// fix row and detect all say it: when a directory on the way is shut, that
// directory and chmod u+rx (a chmod of the file cannot help); else the
// file itself and chmod u+r (its directories let the user in already).
func TestAnUnreadableFileHasOneTrueFix(t *testing.T) {
	for _, tc := range []struct{ name, culprit string }{{"the file", "file"}, {"a shut directory", "dir"}} {
		t.Run(tc.name, func(t *testing.T) {
			// The runtime directory is made private (0700) by whoever runs:
			// one of its own keeps the home's parents open to the test user.
			w := doctortest.New(t).Healthy().Set("XDG_RUNTIME_DIR=" + t.TempDir())
			path := w.File(".config/herdr-pi/config.toml", "[notify]\n", 0o600)
			for dir := filepath.Dir(path); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
				// Group too: AsUnprivileged changes only the uid files are checked as.
				if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o055 != 0o055 {
					if err := os.Chmod(dir, fi.Mode().Perm()|0o055); err != nil {
						t.Fatal(err)
					}
				}
			}
			dir := filepath.Dir(path)
			fix := func(who string) string {
				return "make " + path + " readable by " + who + " (chmod u+r " + path + ", or chown it)"
			}
			shut := path
			if tc.culprit == "dir" {
				shut = dir
				fix = func(who string) string {
					return "the directory " + dir + " cannot be entered; make it searchable by " + who + " (chmod u+rx " + dir + ", or chown it)"
				}
			}
			if err := os.Chmod(shut, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(shut, 0o700) })
			var doctorOut, detectOut string
			testenv.AsUnprivileged(t, path, func() {
				_, doctorOut, _ = runDoctor(w, "--json", "config")
				var out bytes.Buffer
				Main(context.Background(), []string{"herdr-pi", "detect", "--json", path},
					IO{In: strings.NewReader(""), Out: &out, Err: io.Discard, Env: w.Env()})
				detectOut = out.String()
			})
			var rep doctor.Report
			if err := json.Unmarshal([]byte(doctorOut), &rep); err != nil {
				t.Fatalf("%v\n%s", err, doctorOut)
			}
			var row doctor.Row
			for _, r := range rep.Checks {
				if r.Name == "config.toml" {
					row = r
				}
			}
			who := "the user running herdr-pi"
			if row.Fix != fix(who) || !strings.Contains(row.Detail, "permission denied; "+fix(who)) {
				t.Errorf("doctor: detail %q\nfix %q\nwant the fix %q in both", row.Detail, row.Fix, fix(who))
			}
			var verdict struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(detectOut), &verdict); err != nil {
				t.Fatalf("%v\n%s", err, detectOut)
			}
			if want := path + ": permission denied; " + fix("you"); verdict.Error.Message != want {
				t.Errorf("detect: %q\nwant %q", verdict.Error.Message, want)
			}
		})
	}
}
