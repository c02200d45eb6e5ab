package commands

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
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
			w := newWorld(t).healthy().set(tc.herdr...)
			code, out, errOut := w.doctor("--json")
			if code != tc.code || errOut != "" {
				t.Errorf("exit %d, want %d; stderr %q\n%s", code, tc.code, errOut, out)
			}
			validate(t, schema, out)
			var rep doctorReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			counts := countRows(rep.Checks)
			if rep.OK != (tc.code == 0) || rep.Counts[statusFail] != counts[statusFail] || rep.Counts[statusOK] != counts[statusOK] || rep.Counts[statusWarn] != counts[statusWarn] {
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
	w := newWorld(t).set("HERDR_ENV=1", "HERDR_PANE_ID=w1:p1", "HERDR_SOCKET_PATH=/nonexistent/dir/herdr.sock")
	code, out, _ := w.doctor("herdr")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"fail  socket", "/nonexistent/dir/herdr.sock does not exist", "fix: start Herdr"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorSectionArguments(t *testing.T) {
	w := newWorld(t).healthy()
	code, out, _ := w.doctor("runtime", "config")
	if code != 0 || !strings.HasPrefix(out, "Configuration\n") || !strings.Contains(out, "\nRuntime\n") || strings.Contains(out, "Herdr\n") {
		t.Errorf("doctor runtime config: exit %d\n%s", code, out)
	}
	code, _, errOut := w.doctor("pi", "--json")
	if code != 2 || !strings.Contains(errOut, "flags go before the sections: herdr-pi doctor --json pi") {
		t.Errorf("flag after a section: exit %d, %q", code, errOut)
	}
	code, _, errOut = w.doctor("plumbing")
	if code != 2 || !strings.Contains(errOut, `no section "plumbing" (sections: herdr, pi, config, notify, runtime)`) {
		t.Errorf("unknown section: exit %d, %q", code, errOut)
	}
}

// A pi that never answers, and leaves a child holding its output open,
// costs doctor its deadline and no more.
func TestDoctorNeverHangsOnAProgram(t *testing.T) {
	w := newWorld(t)
	w.fakeNode("v24.22.3")
	w.script("pi", "/bin/sleep 30 & /bin/sleep 30")
	start := time.Now()
	rows := piChecks(t.Context(), w.doctorEnv(300*time.Millisecond))
	took := time.Since(start)
	if r := rows[0]; r.Status != statusWarn || !strings.Contains(r.Detail, "did not answer 'pi --version': no answer within 300ms") || r.Fix == "" {
		t.Errorf("pi row %+v", r)
	}
	if took > 2*time.Second {
		t.Errorf("doctor waited %v for a stuck pi (deadline 300ms)", took)
	}
}

// The whole doctor, on a healthy machine with the real node when there is
// one, stays well inside the budget the issue sets (about 3 s).
func TestDoctorIsFast(t *testing.T) {
	w := newWorld(t).healthy()
	start := time.Now()
	if code, out, _ := w.doctor(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("doctor took %v", took)
	} else {
		t.Logf("doctor took %v", took)
	}
}

// Inside tmux, doctor asks the real tmux server whether it lets
// notification sequences out.
func TestDoctorTmuxPassthroughRow(t *testing.T) {
	srv := tmuxtest.New(t, "set -g allow-passthrough off\n")
	srv.Tmux(t, "new-session", "-d", "-s", "doc", "-x", "80", "-y", "24", "sleep 60")
	pane := strings.TrimSpace(srv.Tmux(t, "display-message", "-p", "-t", "doc", "#{pane_id}"))
	pid := strings.TrimSpace(srv.Tmux(t, "display-message", "-p", "-t", "doc", "#{pid}"))
	w := newWorld(t).set("TMUX="+srv.Socket+","+pid+",0", "TMUX_PANE="+pane)
	row := func() checkRow {
		t.Helper()
		rows := rowsByName(runSections(t.Context(), w.doctorEnv(time.Second), pickSections([]string{"notify"})))
		return rows["notify/tmux passthrough"]
	}
	checkRowWant(t, row(), "fail|tmux server "+srv.Socket+", pane "+pane+": allow-passthrough is off, so tmux drops the notification sequences and notifications will not show|run `tmux set -g allow-passthrough on`")
	srv.Tmux(t, "set", "-g", "allow-passthrough", "on")
	checkRowWant(t, row(), "ok|allow-passthrough is on")
}
