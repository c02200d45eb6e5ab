package settings

import (
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// The TOML parser quotes the text it stopped at, raw: an escape cut by a
// line break ("\<newline>") put a newline in doctor's row and the config
// problem, and a bad token of half a MiB was quoted whole. What herdr-pi
// says of a parse error is one line of bounded length.
func TestTOMLParseMessageIsOneShortLine(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"escape cut by a newline", "[ui.toast]\ndelivery = \"\\\n001b]0;t\\7\"u"},
		{"huge bare word", "a = " + strings.Repeat("x", 512<<10) + "\n"},
		{"huge bad escape", "a = \"\\" + strings.Repeat("q", 512<<10) + "\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v map[string]any
			_, err := toml.Decode(c.text, &v)
			var pe toml.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("no parse error: %v", err)
			}
			checkParseMessage(t, TOMLParseMessage([]byte(c.text), pe))
			_, problems := ParseConfig([]byte(c.text), "c.toml")
			for _, p := range problems {
				checkParseMessage(t, p.Msg)
			}
		})
	}
}

// maxParseMessage bounds what a parse error says: a sentence and a short
// quote of the text at fault.
const maxParseMessage = 300

func checkParseMessage(t *testing.T, msg string) {
	t.Helper()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("message %.300q is more than one line", msg)
	}
	if len(msg) > maxParseMessage {
		t.Fatalf("message is %d bytes, want at most %d: %.200q…", len(msg), maxParseMessage, msg)
	}
}
