package osc

import "bytes"

// WrapTmux wraps seq in tmux's DCS passthrough once per level:
// ESC P tmux; <seq with every ESC doubled> ESC \ (notifications-and-sentinel.md
// §26). tmux unwraps one level, so a pane of a tmux running inside another
// tmux needs two. levels <= 0 returns seq unchanged, and nothing to send
// stays nothing: an empty passthrough would still reach the terminal.
func WrapTmux(seq []byte, levels int) []byte {
	if len(seq) == 0 {
		return nil
	}
	for range levels {
		var b bytes.Buffer
		b.Grow(len(seq) + 16)
		b.WriteString("\x1bPtmux;")
		for _, c := range seq {
			if c == 0x1b {
				b.WriteByte(0x1b)
			}
			b.WriteByte(c)
		}
		b.WriteString(st)
		seq = b.Bytes()
	}
	return seq
}
