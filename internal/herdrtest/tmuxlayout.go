package herdrtest

import (
	"fmt"
	"strconv"
	"strings"
)

// layoutCell is one cell of a tmux window layout: a pane (leaf) or a row
// ('{', side by side) or column ('[', stacked) of cells.
type layoutCell struct {
	w, h, x, y int
	pane       int // tmux pane number (%n), leaves only
	kind       byte
	kids       []*layoutCell
}

// parseTmuxLayout reads tmux's #{window_layout}: "csum,WxH,X,Y" followed by
// ",n" for a pane, or "{cells}" / "[cells]" for a row or a column.
func parseTmuxLayout(s string) (*layoutCell, error) {
	_, body, ok := strings.Cut(s, ",")
	if !ok {
		return nil, fmt.Errorf("tmux layout %q has no checksum", s)
	}
	lp := &layoutParser{s: body}
	c, err := lp.cell()
	if err == nil && lp.i != len(lp.s) {
		err = fmt.Errorf("trailing %q", lp.s[lp.i:])
	}
	if err != nil {
		return nil, fmt.Errorf("tmux layout %q: %w", s, err)
	}
	return c, nil
}

type layoutParser struct {
	s string
	i int
}

func (p *layoutParser) num() (int, error) {
	j := p.i
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	if j == p.i || j-p.i > 6 {
		return 0, fmt.Errorf("want a number at %d", p.i)
	}
	n, _ := strconv.Atoi(p.s[p.i:j])
	p.i = j
	return n, nil
}

func (p *layoutParser) want(b byte) error {
	if p.i >= len(p.s) || p.s[p.i] != b {
		return fmt.Errorf("want %q at %d", b, p.i)
	}
	p.i++
	return nil
}

func (p *layoutParser) cell() (*layoutCell, error) {
	c := &layoutCell{}
	var err error
	for _, step := range []func() error{
		func() error { c.w, err = p.num(); return err },
		func() error { return p.want('x') },
		func() error { c.h, err = p.num(); return err },
		func() error { return p.want(',') },
		func() error { c.x, err = p.num(); return err },
		func() error { return p.want(',') },
		func() error { c.y, err = p.num(); return err },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == '{' || p.s[p.i] == '[') {
		c.kind = p.s[p.i]
		end := byte('}')
		if c.kind == '[' {
			end = ']'
		}
		p.i++
		for {
			k, err := p.cell()
			if err != nil {
				return nil, err
			}
			c.kids = append(c.kids, k)
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if err := p.want(end); err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	if err := p.want(','); err != nil {
		return nil, err
	}
	c.pane, err = p.num()
	return c, err
}

func rectOf(x, y, w, h int) map[string]any {
	return map[string]any{"x": x, "y": y, "width": w, "height": h}
}

// herdrLayout turns a tmux layout into Herdr's PaneLayoutSnapshot parts:
// the panes with their cells, and the splits. Herdr's splits are binary,
// so a tmux row of n cells becomes n-1 nested splits, each between one
// cell and the rest; its ratio is that cell's share.
func herdrLayout(root *layoutCell, paneOf func(n int) (id string, focused bool)) (panes, splits []any) {
	panes, splits = []any{}, []any{}
	var walk func(c *layoutCell)
	walk = func(c *layoutCell) {
		if c.kind == 0 {
			if id, focused := paneOf(c.pane); id != "" {
				panes = append(panes, map[string]any{"pane_id": id, "focused": focused, "rect": rectOf(c.x, c.y, c.w, c.h)})
			}
			return
		}
		last := c.kids[len(c.kids)-1]
		for _, k := range c.kids[:len(c.kids)-1] {
			dir, size, rest := "right", k.w, last.x+last.w-k.x
			rect := rectOf(k.x, c.y, rest, c.h)
			if c.kind == '[' {
				dir, size, rest = "down", k.h, last.y+last.h-k.y
				rect = rectOf(c.x, k.y, c.w, rest)
			}
			share := 0.5
			if rest > 0 {
				share = float64(size) / float64(rest)
			}
			splits = append(splits, map[string]any{"id": "s" + strconv.Itoa(len(splits)+1),
				"direction": dir, "ratio": share, "rect": rect})
		}
		for _, k := range c.kids {
			walk(k)
		}
	}
	walk(root)
	return panes, splits
}
