package render

import (
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
)

// A row's fix quotes paths and names as much as its detail does (a
// config file's name, a registry entry): both are cleaned, as is the name.
func TestDoctorTextCleansEveryWord(t *testing.T) {
	evil := "\x1b]0;owned\x07\u202e"
	var b strings.Builder
	rows := []doctor.Row{{Section: "runtime", Name: "registry" + evil, Status: doctor.Warn, Detail: "d" + evil, Fix: "rm /run/" + evil}}
	if err := DoctorText(&b, rows, New(false, 0)); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, "fix: rm /run/") {
		t.Errorf("doctor text keeps a control character or lost the fix: %q", got)
	}
}
