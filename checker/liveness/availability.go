package liveness

import (
	"slices"
	"sort"

	"splitbrain/checker/paired"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// Availability is what the lock's liveness cost its clients in a play:
// how many attempts were granted, the longest stretch in which clients
// kept trying and nothing was granted, and how long after each heal the
// next grant came — set against the lock's expiry and bound. The figures
// of several plays (a matrix cell's) add up with Merge.
type Availability struct {
	Attempts int `json:"attempts"`
	Granted  int `json:"granted"`
	Refused  int `json:"refused"`
	// Unknown counts the attempts of unknown outcome, and those still
	// pending when the history ended.
	Unknown int `json:"unknown"`
	// Clients are each client's attempts and grants (its continuation
	// processes folded in), in natural order: a lock can be available on
	// one side of a partition and not on the other.
	Clients []ClientFigures `json:"clients,omitempty"`
	// Longest is the longest stretch in which clients kept trying (each
	// attempt within a retry interval of the last), no client believed
	// it held the lock and nothing was granted; nil when no client ever
	// waited so.
	Longest *Stretch `json:"longest,omitempty"`
	// Heals are the first verdict.MaxViolations faults healed before a
	// client's last attempt, each with the time to the next grant (on
	// any key); HealCount counts them all.
	Heals     []Heal `json:"heals,omitempty"`
	HealCount int    `json:"heal_count"`
	// MaxHealDelay is the longest time from a heal to the next grant (0
	// when no heal was followed by one); NoGrantAfter counts the heals
	// no grant followed.
	MaxHealDelay int64 `json:"max_heal_delay_ns"`
	NoGrantAfter int   `json:"no_grant_after,omitempty"`
	// Expiry and Bound are the lock's (history.LockSetup; 0 when the
	// history records no setup): what the figures are set against. After
	// a partition the lock may stay unavailable for about an expiry (the
	// keys the cut-off side set live that long), a restart delayed past
	// the expiry keeps it unavailable that long, and after any heal a
	// free lock is granted within the bound.
	Expiry int64 `json:"expiry_ns,omitempty"`
	Bound  int64 `json:"bound_ns,omitempty"`
}

// ClientFigures are one client's attempts and grants.
type ClientFigures struct {
	Client   string `json:"client"`
	Attempts int    `json:"attempts"`
	Granted  int    `json:"granted"`
}

// Stretch is a stretch of time in which clients kept trying to acquire a
// lock that nobody believed they held, and nothing was granted.
type Stretch struct {
	Key string `json:"key"`
	// Client is the process whose attempt began it.
	Client string `json:"client"`
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	// Granted: a grant ended it; otherwise the clients stopped trying
	// (its end is the last refusal).
	Granted bool `json:"granted"`
}

// Length is how long the stretch lasted.
func (s Stretch) Length() int64 { return s.To - s.From }

// Heal is a fault's heal and the next grant after it.
type Heal struct {
	Fault string `json:"fault"`
	At    int64  `json:"at"`
	// Grant is the next grant's instant (its client saw the OK) at or
	// after At, and Delay the time to it; both -1 when none came.
	Grant int64 `json:"grant"`
	Delay int64 `json:"delay_ns"`
}

// Share is the share of attempts granted; 0 without attempts.
func (a *Availability) Share() float64 {
	if a == nil || a.Attempts == 0 {
		return 0
	}
	return float64(a.Granted) / float64(a.Attempts)
}

// Merge adds the figures of several plays up, as a matrix cell shows them:
// the counts summed, the longest stretch and heal delay the longest of
// any, the heals of all (up to verdict.MaxViolations listed), the expiry
// and bound the largest. Nil figures (a play that recorded none) are
// skipped; nil when all are.
func Merge(as ...*Availability) *Availability {
	var out *Availability
	for _, a := range as {
		if a == nil {
			continue
		}
		if out == nil {
			out = &Availability{}
		}
		out.Attempts += a.Attempts
		out.Granted += a.Granted
		out.Refused += a.Refused
		out.Unknown += a.Unknown
		for _, c := range a.Clients {
			i := slices.IndexFunc(out.Clients, func(o ClientFigures) bool { return o.Client == c.Client })
			if i < 0 {
				out.Clients = append(out.Clients, ClientFigures{Client: c.Client})
				i = len(out.Clients) - 1
			}
			out.Clients[i].Attempts += c.Attempts
			out.Clients[i].Granted += c.Granted
		}
		if a.Longest != nil && (out.Longest == nil || a.Longest.Length() > out.Longest.Length()) {
			l := *a.Longest
			out.Longest = &l
		}
		for _, h := range a.Heals {
			if len(out.Heals) < verdict.MaxViolations {
				out.Heals = append(out.Heals, h)
			}
		}
		out.HealCount += a.HealCount
		out.MaxHealDelay = max(out.MaxHealDelay, a.MaxHealDelay)
		out.NoGrantAfter += a.NoGrantAfter
		out.Expiry = max(out.Expiry, a.Expiry)
		out.Bound = max(out.Bound, a.Bound)
	}
	return out
}

// availability measures a play's figures from its attempts, the beliefs
// and faults of h, and the lock's setup (nil: none recorded).
func availability(atts []*attempt, h *paired.History, s *history.LockSetup) *Availability {
	a := &Availability{}
	var gap int64
	if s != nil {
		a.Expiry, a.Bound, gap = s.Expiry, s.Bound(), s.Retry
	}
	failing := map[string][]*attempt{}
	var lastInvoke int64 = -1
	byClient := map[string]*ClientFigures{}
	for _, at := range atts {
		lastInvoke = max(lastInvoke, at.inv)
		cf := byClient[at.client]
		if cf == nil {
			cf = &ClientFigures{Client: at.client}
			byClient[at.client] = cf
		}
		cf.Attempts++
		if at.outcome == history.OK {
			cf.Granted++
		}
		a.Attempts++
		switch at.outcome {
		case history.OK:
			a.Granted++
		case history.Fail:
			a.Refused++
		default:
			a.Unknown++
		}
		if at.outcome != history.OK {
			failing[at.key] = append(failing[at.key], at)
		}
	}
	names := make([]string, 0, len(byClient))
	for c := range byClient {
		names = append(names, c)
	}
	paired.SortNatural(names)
	for _, c := range names {
		a.Clients = append(a.Clients, *byClient[c])
	}
	var allGrants []int64
	for _, k := range h.Keys {
		// Sized once: a key has hundreds of thousands of beliefs in a
		// long history.
		grants := make([]int64, 0, len(k.Beliefs))
		held := make([]span, 0, len(k.Beliefs))
		for i := range k.Beliefs {
			b := &k.Beliefs[i]
			held = append(held, span{b.Start, b.End})
			if b.Grant() {
				grants = append(grants, b.Start)
			}
		}
		slices.Sort(grants)
		allGrants = append(allGrants, grants...)
		if st := longest(failing[k.Key], grants, merged(held), gap); st != nil && (a.Longest == nil || st.Length() > a.Longest.Length()) {
			a.Longest = st
		}
	}
	slices.Sort(allGrants)
	for _, f := range faultsOf(h.Faults) {
		if !f.Healed || storageOnly(f) || f.End > lastInvoke {
			// No client tried after it (the run's last heals come
			// after its workload): no grant to wait for.
			continue
		}
		heal := Heal{Fault: f.Label(), At: f.End, Grant: -1, Delay: -1}
		if i := sort.Search(len(allGrants), func(i int) bool { return allGrants[i] >= f.End }); i < len(allGrants) {
			heal.Grant, heal.Delay = allGrants[i], allGrants[i]-f.End
			a.MaxHealDelay = max(a.MaxHealDelay, heal.Delay)
		} else {
			a.NoGrantAfter++
		}
		a.HealCount++
		if len(a.Heals) < verdict.MaxViolations {
			a.Heals = append(a.Heals, heal)
		}
	}
	return a
}

// storageOnly reports whether f acts on the storage's links alone.
func storageOnly(f fault) bool {
	if f.class != classLink || len(f.Links) == 0 {
		return false
	}
	for _, l := range f.Links {
		if endName(l.Node) != storageNode && endName(l.Client) != storageNode {
			return false
		}
	}
	return true
}

// longest is the longest stretch of one key's refused (or unknown)
// attempts, in invoke order, in which nobody held the key and nothing was
// granted: it begins with an attempt invoked while no belief was held,
// goes on while the next attempt comes within gap of the latest end, and
// ends at the first grant after its start if that came within gap of it,
// else at the latest end.
func longest(failing []*attempt, grants []int64, held spans, gap int64) *Stretch {
	var best, open *Stretch
	var lastEnd int64
	close := func() {
		i := sort.Search(len(grants), func(i int) bool { return grants[i] >= open.From })
		if i < len(grants) && grants[i] <= lastEnd+gap {
			open.To, open.Granted = grants[i], true
		} else {
			open.To = lastEnd
		}
		if best == nil || open.Length() > best.Length() {
			best = open
		}
		open = nil
	}
	for _, at := range failing {
		if open != nil {
			i := sort.Search(len(grants), func(i int) bool { return grants[i] >= open.From })
			if (i < len(grants) && grants[i] <= at.inv) || at.inv > lastEnd+gap {
				close()
			}
		}
		if open == nil {
			if _, busy := held.at(at.inv); busy {
				continue
			}
			open = &Stretch{Key: at.key, Client: at.process, From: at.inv}
			lastEnd = at.end
			continue
		}
		lastEnd = max(lastEnd, at.end)
	}
	if open != nil {
		close()
	}
	return best
}
