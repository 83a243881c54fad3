package gate

import (
	"context"
	"errors"
	"log/slog"
)

// Stored spellings. Keys are compared in NFC, but the app may store an id
// in another spelling (NFD, or a KELVIN SIGN whose NFC is "K"). A
// confirmation finds such a row through the spellings the library knows:
// the spellings table, which a full scan fills and which is complete up
// to a generation the database records (Head.SpellingsGen), and beyond
// it the spellings a view took from the log. Without a complete table (a
// source never attached and opened read-only, or attached again after a
// migration until its rebuild completes) the call asks every spelling of
// its keys, found from each key alone (walk.go): no read of the table.
// Only keys beyond the walk's limits make a view's set start from a read
// of the table's keys that hold a character outside ASCII.

// spellingsTable reports whether the spellings table had a row at the
// last read of the head (a probe, or a spellings view's build).
func (g *Gate) spellingsTable() bool { return g.hasSp.Load() }

// spellingsView returns a view whose spellings the call may ask through
// when no filter serves it: the one held, or a new one of the spellings
// alone (built once, by one caller; the others wait for it).
func (c *Call) spellingsView(ctx context.Context, w *walk) (*View, error) {
	for range retries {
		c.dropOlder()
		if h := c.g.Held(); h != nil && h.File.N > c.F.N {
			// The call began on a file the path no longer names: its
			// answer is about that file, through a view of its spellings
			// that serves this call alone.
			return c.buildSpellingsView(ctx, w)
		}
		if v := c.usable(ctx, w); v != nil {
			return v, nil
		}
		c.PutReader() // the one building may need a reader: never wait holding one
		select {
		case c.g.spTurn <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		v := c.usable(ctx, w)
		var err error
		if v == nil {
			v, err = c.newSpellingsView(ctx, c.g.Held(), w)
		}
		<-c.g.spTurn
		if err != nil || v != nil {
			return v, err
		}
		if s := c.g.Serving(); s != nil && s.File == c.F {
			// A filter serves a binding of the source the call's does not
			// match: the call's is out of date, or the filter is (the
			// triggers are gone, as the schema the call read says).
			schema, err := c.schema(ctx)
			switch {
			case err != nil:
				return nil, err
			case schema == c.b.schema && !c.b.src.Logged:
				c.g.drop(s, errors.New("the source's triggers are not in place"), false)
			default:
				return nil, c.rebind(ctx)
			}
		}
	}
	return nil, errors.New("read stored spellings: the collection's state keeps changing under the call")
}

// dropOlder drops the view held if it covers a file the path no longer
// names (the app replaced the database): it can serve no call again, and
// a rebuild makes one for the file there now.
func (c *Call) dropOlder() {
	if v := c.g.Held(); v != nil && v.File.N < c.F.N {
		c.g.drop(v, errors.New("the database file was replaced"), v.F != nil)
	}
}

// usable returns the view held if its spellings may serve the call (the
// probe checks a logged source's view further): a walked one only if
// every key of the call walks.
func (c *Call) usable(ctx context.Context, w *walk) *View {
	v, src := c.g.Held(), c.b.src
	if v == nil || v.File != c.F || v.Src.ID != src.ID || v.Src.Logged != src.Logged {
		return nil
	}
	if v.Walked {
		if !w.ok() {
			return nil
		}
		return v
	}
	if !src.Logged {
		if dv, err := c.F.St.DataVersion(ctx); err != nil || dv != v.DV {
			return nil // something committed since the table was read
		}
	}
	return v
}

// newSpellingsView builds a view of the stored spellings alone and holds
// it in place of old, which cannot serve the call; nil if the state
// changed meanwhile (the caller looks again).
func (c *Call) newSpellingsView(ctx context.Context, old *View, w *walk) (*View, error) {
	v, err := c.buildSpellingsView(ctx, w)
	if err != nil || !c.g.SetSpellings(v, old) {
		return nil, err
	}
	return v, nil
}

// buildSpellingsView makes a view of the stored spellings of the call's
// file alone: the complete table's, else walked if every key of the call
// walks, else read.
func (c *Call) buildSpellingsView(ctx context.Context, w *walk) (*View, error) {
	src := c.b.src
	var v *View
	walked := func(epoch uint64) *View {
		v := NewView(nil, c.F, src, epoch, Mark{})
		v.Walked = true
		return v
	}
	switch {
	case src.Logged:
		conn, err := c.Reader(ctx)
		if err != nil {
			return nil, err
		}
		h, err := conn.Head(ctx, src)
		if err != nil {
			return nil, err
		}
		// As a probe does: where the table has rows, the call's probe
		// then asks through it at once, not after a first probe without
		// it (a process's first page of names).
		c.g.hasSp.Store(h.HasSpellings)
		if h.Scanned {
			// The table is complete up to SpellingsGen; the probe reads
			// what was logged since.
			v = NewView(nil, c.F, src, h.Epoch, Mark{Gen: h.SpellingsGen})
			break
		}
		if w.ok() {
			v = walked(h.Epoch)
			break
		}
		v = NewView(nil, c.F, src, h.Epoch, Mark{h.Seq, h.Tag})
		if err := c.readSpellings(ctx, v); err != nil {
			return nil, err
		}
	case w.ok():
		v = walked(0)
	default:
		dv, err := c.F.St.DataVersion(ctx)
		if err != nil {
			return nil, err
		}
		v = NewView(nil, c.F, src, 0, Mark{})
		v.DV = dv
		if err := c.readSpellings(ctx, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// readSpellings fills v from the table's keys that may be stored in
// another spelling: O(rows), on a connection of its own.
func (c *Call) readSpellings(ctx context.Context, v *View) error {
	if f := c.g.cfg.Knobs.SpellScan; f != nil {
		f()
	}
	c.PutReader()
	var pairs [][2]string
	err := c.F.St.ScanSpellings(ctx, c.b.src, func(key string) error {
		p, _ := canon(c.g.cfg.Compare, []string{key}, nil)
		pairs = append(pairs, p...)
		return nil
	})
	if err != nil {
		return err
	}
	v.AddSpellings(pairs)
	if c.g.cfg.Log != nil {
		c.g.cfg.Log.Info("read the table's stored spellings", slog.Int("spellings", len(pairs)))
	}
	return nil
}

// TailSpellings takes into v the stored spellings logged after from up to
// to (a load, whose filter covers more than the spellings table).
func (c *Call) TailSpellings(ctx context.Context, v *View, from, to uint64) error {
	sp, err := c.tailSpellings(ctx, from, to)
	if err != nil {
		return err
	}
	var pairs [][2]string
	for canon, list := range sp {
		for _, s := range list {
			pairs = append(pairs, [2]string{canon, s})
		}
	}
	v.AddSpellings(pairs)
	return nil
}

// drop stops holding v, if the state still holds it, closes it and, when
// repair, asks for a rebuild.
func (g *Gate) drop(v *View, why error, repair bool) {
	if g.Drop(v) == nil {
		return
	}
	v.Close()
	if v.F != nil {
		g.C.Dropped.Add(1)
	}
	if g.cfg.Log != nil {
		g.cfg.Log.Info("filter dropped", slog.Any("why", why))
	}
	if repair && g.cfg.Repair != nil {
		g.cfg.Repair(why)
	}
}
