package session

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// lineSeeds are session lines as real Pi sessions have them, and the
// ways a line can go wrong: the seeds both fuzz targets start from.
var lineSeeds = []string{
	header("/p"),
	msg("a1", "u1", "assistant", text("x\n:input_needed:"), "stop"),
	msg("a1", "u1", "assistant", "plain\r\n:input_needed:\r\n", "stop"),
	msg("u1", "", "user", text("hi"), ""),
	msg("u1", "", "user", "a string content", ""),
	// The marker around CRLF, trailing blanks and JavaScript whitespace; a
	// lone CR; in a code fence; quoted; bold; mentioned.
	msg("a1", "u1", "assistant", text("Which one?\r\n\r\n  :input_needed:  \r\n\r\n"), "stop"),
	msg("a1", "u1", "assistant", text("Which one?\n\t:input_needed:\u00a0\ufeff\u3000\n"), "stop"),
	msg("a1", "u1", "assistant", text("Which one?\r:input_needed:"), "stop"),
	msg("a1", "u1", "assistant", text("Use:\n```\n:input_needed:\n```"), "stop"),
	msg("a1", "u1", "assistant", text("Write:\n> :input_needed:"), "stop"),
	msg("a1", "u1", "assistant", text("Which one?\n**:input_needed:**"), "stop"),
	msg("a1", "u1", "assistant", text("The marker is :input_needed: here."), "stop"),
	// Several text parts, thinking, a tool call after the text, an empty
	// or textless part, a part of another shape.
	msg("a1", "u1", "assistant", text("Which one?", ":input_needed:"), "stop"),
	msg("a1", "u1", "assistant", []any{map[string]any{"type": "thinking", "thinking": ":input_needed:"}, map[string]any{"type": "text", "text": "Done."}}, "stop"),
	msg("a1", "u1", "assistant", []any{map[string]any{"type": "text", "text": "Which one?\n:input_needed:"}, map[string]any{"type": "thinking", "thinking": "more"}}, "stop"),
	msg("a1", "u1", "assistant", handOver("Which one?\n:input_needed:"), "toolUse"),
	msg("a1", "u1", "assistant", []any{map[string]any{"type": "text", "text": "Which?\n:input_needed:"}, map[string]any{"type": "text"}, map[string]any{"type": "text", "text": nil}}, "stop"),
	`{"type":"message","id":"x","message":{"role":"assistant","content":[{"type":"text"},7,null]}}`,
	`{"type":"message","id":"x","parentId":"y","message":{"role":"assistant","content":{"type":"text","text":":input_needed:"},"stopReason":"stop"}}`,
	`{"type":"message","id":"x","parentId":"y","message":{"role":"assistant","content":null,"stopReason":null}}`,
	msg("a1", "u1", "assistant", []any{}, "error"),
	msg("a1", "u1", "assistant", text("Which?\n:input_"), "aborted"),
	// Entries that are not messages: compaction, branch summary, custom
	// message and state, label, a retry's context edit, model change.
	`{"type":"compaction","id":"c","parentId":"b","summary":"s","firstKeptEntryId":"a","tokensBefore":5}`,
	`{"type":"branch_summary","id":"c","parentId":"b","fromId":"a","summary":"s"}`,
	`{"type":"custom_message","id":"c","parentId":"b","customType":"n","content":"Use Bun.","display":true}`,
	`{"type":"custom","id":"c","parentId":"b","customType":"s","data":{"role":"user"}}`,
	`{"type":"label","id":"c","parentId":"b","targetId":"a","label":"here"}`,
	`{"type":"context_edit","id":"c","parentId":"b","targetId":"a","replacement":null}`,
	`{"type":"model_change","id":"m0","parentId":null,"provider":"fake","modelId":"fake-model"}`,
	msg("b1", "a1", "bashExecution", nil, ""),
	// Broken and odd lines: a half-written one, a BOM, keys in another
	// case (Go's decoder matches them, JavaScript's does not), escapes.
	msg("a1", "u1", "assistant", text("x\n:input_needed:"), "stop")[:60],
	"\ufeff" + header("/p"),
	`{"TYPE":"message","ID":"x","Message":{"Role":"assistant","Content":[{"Type":"text","Text":":input_needed:"}]}}`,
	`{"type":"message","id":"x","message":{"role":"assistant","content":[{"type":"text","text":"Q?\u2028\n\u003ainput_needed\u003a"}]}}`,
	"{", "\xff", `{"type":"message","id":"x","parentId":5}`,
}

// FuzzParseLine: any bytes, no panic; an accepted message entry has an id
// and a role; a line reads the same with Pi's line end or CRLF after it.
func FuzzParseLine(f *testing.F) {
	for _, s := range lineSeeds {
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
		crlf, err2 := ParseLine(append(bytes.Clone(b), '\r', '\n'))
		if (err == nil) != (err2 == nil) || crlf != e {
			t.Fatalf("a CRLF after the line changed it: %+v (%v) vs %+v (%v)", e, err, crlf, err2)
		}
	})
}

// FuzzTailSplits: a session fed in arbitrary pieces yields the same tree
// as fed whole, and so does the same session with CRLF line ends.
func FuzzTailSplits(f *testing.F) {
	doc := header("/p") + "\n" + msg("u1", "", "user", text("hi"), "") + "\n" +
		"garbage\n" + msg("a1", "u1", "assistant", text(reply), "stop") + "\n"
	f.Add([]byte(doc), uint16(1), uint16(7))
	f.Add([]byte(doc), uint16(100), uint16(3))
	// A whole session: blank lines, a compaction, a custom message, a
	// branch whose last line hangs off an earlier entry, then an answer
	// half written.
	session := strings.Join([]string{
		header("/p"), "",
		`{"type":"model_change","id":"m0","parentId":null,"provider":"fake","modelId":"fake-model"}`,
		msg("u1", "m0", "user", text("hi"), ""),
		msg("a1", "u1", "assistant", handOver("Let me look."), "toolUse"),
		msg("t1", "a1", "toolResult", text("out"), ""),
		msg("a2", "t1", "assistant", text("Which one?\r\n\r\n:input_needed:\r\n"), "stop"),
		`{"type":"compaction","id":"c1","parentId":"a2","summary":"s","firstKeptEntryId":"a2","tokensBefore":5}`,
		`{"type":"custom_message","id":"c2","parentId":"c1","customType":"n","content":"Use Bun.","display":true}`,
		msg("u2", "c2", "user", text("Use Bun."), ""),
		msg("a3", "u2", "assistant", text("Done."), "stop"),
		msg("a4", "a2", "assistant", text("Still there?\n:input_needed:"), "stop"),
		"  ", "",
	}, "\n") + msg("u3", "a4", "user", text("yes"), "")[:50]
	f.Add([]byte(session), uint16(0), uint16(0))
	f.Add([]byte(session), uint16(len(session)/3), uint16(2*len(session)/3))
	f.Add([]byte(strings.ReplaceAll(session, "\n", "\r\n")), uint16(41), uint16(42))
	// Split inside a multi-byte character and between CR and LF.
	wide := header("/p") + "\r\n" + msg("a1", "", "assistant", text("どれ？\n:input_needed:"), "stop") + "\r\n"
	f.Add([]byte(wide), uint16(strings.Index(wide, "ど")+1), uint16(strings.LastIndex(wide, "\r")+1))
	for _, s := range lineSeeds {
		f.Add([]byte(header("/p")+"\n"+s+"\n"), uint16(len(s)/2), uint16(len(s)))
	}
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
		crlf := newTail("x", time.Time{})
		crlf.feed(bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")))
		b3, id3 := crlf.tree.Blocked()
		if b1 != b3 || id1 != id3 || whole.tree.Len() != crlf.tree.Len() {
			t.Fatalf("CRLF line ends changed the result: %v %q %d vs %v %q %d", b1, id1, whole.tree.Len(), b3, id3, crlf.tree.Len())
		}
	})
}

// FuzzHasMarker: the rule of §16 on any text. Trailing JavaScript
// whitespace never matters; a marker line appended always blocks, a
// non-blank line after it never does; a text that blocks holds the
// marker.
func FuzzHasMarker(f *testing.F) {
	for _, s := range []string{
		"", "\n\n", Marker, "Please choose one.\n\n:input_needed:", "Please choose one.\r\n  :input_needed:  \r\n",
		"The marker is :input_needed: when input is required.", ":input_needed:\nAdditional text",
		"Question?\r:input_needed:", "Question?\n:input_needed:\u0085", "a\n```\n:input_needed:\n```",
		"Question?\n:input_needed:\ufeff\u00a0\u3000", "> :input_needed:", ":input_needed", "\xff:input_needed:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := HasMarker(s)
		if got && !strings.Contains(s, Marker) {
			t.Fatalf("HasMarker(%q) without the marker in it", s)
		}
		for _, ws := range []string{" ", "\t", "\r\n", "\n\n", "\u00a0", "\ufeff", "\u2028", "\u3000 \n"} {
			if HasMarker(s+ws) != got {
				t.Fatalf("HasMarker(%q) = %v, but %v with %q after it", s, got, !got, ws)
			}
		}
		if !HasMarker(s + "\n" + Marker) {
			t.Fatalf("%q plus a marker line does not block", s)
		}
		if HasMarker(s + "\r\n" + Marker + "\nx") {
			t.Fatalf("%q plus a marker line and a line after it blocks", s)
		}
	})
}
