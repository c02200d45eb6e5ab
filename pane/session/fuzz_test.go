package session

import (
	"testing"
	"time"
)

// FuzzParseLine: any bytes, no panic; an accepted message entry has an id.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		header("/p"),
		msg("a1", "u1", "assistant", text("x\n:input_needed:"), "stop"),
		msg("a1", "u1", "assistant", "plain\r\n:input_needed:\r\n", "stop"),
		msg("u1", "", "user", text("hi"), ""),
		`{"type":"message","id":"x","message":{"role":"assistant","content":[{"type":"text"},7,null]}}`,
		`{"type":"compaction","id":"c","parentId":"b","summary":"s"}`,
		"{", "\xff", `{"type":"message","id":"x","parentId":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseLine(b)
		if err == nil && e.Type != "session" && e.ID == "" {
			t.Fatalf("entry without id accepted: %+v", e)
		}
		if err == nil && e.Type == "message" && e.Role == "" {
			t.Fatalf("message without role accepted: %+v", e)
		}
	})
}

// FuzzTailSplits: a session fed in arbitrary pieces yields the same tree
// as fed whole.
func FuzzTailSplits(f *testing.F) {
	doc := header("/p") + "\n" + msg("u1", "", "user", text("hi"), "") + "\n" +
		"garbage\n" + msg("a1", "u1", "assistant", text(reply), "stop") + "\n"
	f.Add([]byte(doc), uint16(1), uint16(7))
	f.Add([]byte(doc), uint16(100), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, s1, s2 uint16) {
		whole := newTail("x", time.Time{})
		whole.feed(data)
		parts := newTail("x", time.Time{})
		i, j := int(s1)%(len(data)+1), int(s2)%(len(data)+1)
		if i > j {
			i, j = j, i
		}
		parts.feed(data[:i])
		parts.feed(data[i:j])
		parts.feed(data[j:])
		b1, id1 := whole.tree.Blocked()
		b2, id2 := parts.tree.Blocked()
		if b1 != b2 || id1 != id2 || whole.tree.Len() != parts.tree.Len() {
			t.Fatalf("split at %d,%d changed the result: %v %q %d vs %v %q %d", i, j, b1, id1, whole.tree.Len(), b2, id2, parts.tree.Len())
		}
	})
}
