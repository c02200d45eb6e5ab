package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/settings"
)

// maxMistake bounds what toastDelivery says of Herdr's config past the
// file's name: the place, a sentence and a short quote of what stands
// there, however long the value.
const maxMistake = 400

func checkMistake(t *testing.T, data []byte, mistake, shown string) {
	t.Helper()
	if mistake == "" {
		return
	}
	if !strings.Contains(mistake, shown) {
		t.Fatalf("%.200q: the mistake %.200q does not name the file", data, mistake)
	}
	if strings.ContainsAny(mistake, "\n\r") {
		t.Fatalf("%.200q: the mistake %.300q is more than one line", data, mistake)
	}
	if n := len(mistake) - len(shown); n > maxMistake {
		t.Fatalf("%.100q: the mistake is %d bytes past the file's name, want at most %d: %.200q…", data, n, maxMistake, mistake)
	}
}

// Herdr's config is another program's file, up to a MiB: a delivery value
// of half a MiB, or a table or array there, is quoted short on one line.
func TestToastDeliveryQuotesTheValueShort(t *testing.T) {
	huge := strings.Repeat("x", 512<<10)
	for _, c := range []struct{ name, toml string }{
		{"huge string", "[ui.toast]\ndelivery = \"" + huge + "\"\n"},
		{"huge array", "[ui.toast]\ndelivery = [" + strings.Repeat("1,", 100<<10) + "1]\n"},
		{"multi-line string", "[ui.toast]\ndelivery = \"\"\"a\nb\nc\"\"\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "h.toml")
			if err := os.WriteFile(file, []byte(c.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			r := toastRow(settings.EnvFrom([]string{"HERDR_CONFIG_PATH=" + file}), func(name, status, detail, fix string) Row {
				return Row{Name: name, Status: status, Detail: detail, Fix: fix}
			})
			if r.Status != Warn {
				t.Errorf("row %+v, want a warning", r)
			}
			checkMistake(t, []byte(c.toml), r.Detail, file)
		})
	}
}

// FuzzToastDelivery: whatever Herdr's config holds, toastDelivery finds
// the delivery or says one bounded line naming the file.
func FuzzToastDelivery(f *testing.F) {
	for _, s := range []string{"", "[ui.toast]\ndelivery = \"herdr\"\n", "[ui]\ntoast = 1\n", "ui = []\n",
		"[ui.toast]\ndelivery = [1, 2]\n", "[ui.toast]\ndelivery = {a = 1}\n", "[ui.toast\n", "[ui.toast]\ndelivery = \"\"\"a\nb\"\"\"\n",
		"[ui.toast]\ndelivery = \"\\u001b]0;t\\u0007\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, mistake := toastDelivery(data, "h.toml")
		if d != nil && mistake != "" {
			t.Fatalf("%q: both a delivery %q and a mistake %q", data, *d, mistake)
		}
		checkMistake(t, data, mistake, "h.toml")
	})
}
