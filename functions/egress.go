package functions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrEgressDenied reports a webhook destination the egress policy
// refuses.
var ErrEgressDenied = errors.New("webhook destination denied")

// DefaultDeny is what an Egress denies besides its deny list: link-local
// addresses (where cloud metadata services live) and the metadata
// services' well-known names and addresses.
var DefaultDeny = []string{
	"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32",
	"metadata.google.internal", "metadata.goog", "metadata",
}

// Egress decides which destinations webhooks may call: a destination
// matching the deny list (and DefaultDeny) is refused; with an allow list,
// only a destination matching it is called. Entries are CIDRs
// ("10.0.0.0/8"), single addresses, host names ("hooks.example.com") or
// domain suffixes ("*.example.com"). Deny wins over allow.
//
// A URL is checked when its function is saved (its host name, or its
// literal address) and again on every connection, on the address the
// name resolved to, so DNS cannot smuggle in a denied address. The zero
// Egress (or nil) denies DefaultDeny only.
type Egress struct {
	allow, deny []egressRule
}

// egressRule is one list entry: a prefix or a host name pattern.
type egressRule struct {
	prefix netip.Prefix
	host   string // lower case; "*.x" matches x's subdomains
}

// NewEgress parses allow and deny lists (see Egress).
func NewEgress(allow, deny []string) (*Egress, error) {
	e := &Egress{}
	var err error
	if e.allow, err = parseRules(allow); err != nil {
		return nil, fmt.Errorf("webhook allow list: %w", err)
	}
	if e.deny, err = parseRules(append(append([]string{}, DefaultDeny...), deny...)); err != nil {
		return nil, fmt.Errorf("webhook deny list: %w", err)
	}
	return e, nil
}

func parseRules(entries []string) ([]egressRule, error) {
	var out []egressRule
	for _, s := range entries {
		s = strings.ToLower(strings.TrimSpace(s))
		switch {
		case s == "":
			continue
		case strings.Contains(s, "/"):
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR", s)
			}
			out = append(out, egressRule{prefix: p.Masked()})
		default:
			if a, err := netip.ParseAddr(s); err == nil {
				out = append(out, egressRule{prefix: netip.PrefixFrom(a, a.BitLen())})
				continue
			}
			if strings.ContainsAny(strings.TrimPrefix(s, "*."), "*:/ ") {
				return nil, fmt.Errorf("%q is not a host name, address or CIDR", s)
			}
			out = append(out, egressRule{host: strings.TrimSuffix(s, ".")})
		}
	}
	return out, nil
}

// egressOrDefault returns e, or the default policy when e is nil.
func egressOrDefault(e *Egress) *Egress {
	if e != nil {
		return e
	}
	d, _ := NewEgress(nil, nil)
	return d
}

// CheckURL checks a webhook URL at save time: its host name against the
// name rules, a literal address against every rule. A name the allow
// list does not name passes when the allow list has CIDRs (its address
// is checked at connect time).
func (e *Egress) CheckURL(raw string) error {
	e = egressOrDefault(e)
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEgressDenied, err)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return e.checkAddr(host, a.Unmap(), false)
	}
	if matchName(e.deny, host) {
		return fmt.Errorf("%w: %s is on the deny list", ErrEgressDenied, host)
	}
	if len(e.allow) > 0 && !matchName(e.allow, host) && !hasPrefixes(e.allow) {
		return fmt.Errorf("%w: %s is not on the allow list", ErrEgressDenied, host)
	}
	return nil
}

// checkAddr checks a connection to the address a of host; named reports
// that host's name is on the allow list.
func (e *Egress) checkAddr(host string, a netip.Addr, named bool) error {
	if matchName(e.deny, host) || matchAddr(e.deny, a) {
		return fmt.Errorf("%w: %s (%s) is on the deny list", ErrEgressDenied, host, a)
	}
	if len(e.allow) > 0 && !named && !matchAddr(e.allow, a) {
		return fmt.Errorf("%w: %s (%s) is not on the allow list", ErrEgressDenied, host, a)
	}
	return nil
}

func matchName(rules []egressRule, host string) bool {
	for _, r := range rules {
		if r.host == "" {
			continue
		}
		if suffix, ok := strings.CutPrefix(r.host, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == r.host {
			return true
		}
	}
	return false
}

func matchAddr(rules []egressRule, a netip.Addr) bool {
	for _, r := range rules {
		if r.host == "" && r.prefix.Contains(a) {
			return true
		}
	}
	return false
}

func hasPrefixes(rules []egressRule) bool {
	for _, r := range rules {
		if r.host == "" {
			return true
		}
	}
	return false
}

// DialContext dials like a net.Dialer, refusing (with ErrEgressDenied)
// a connection whose resolved address the policy denies.
func (e *Egress) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	e = egressOrDefault(e)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	named := matchName(e.allow, host)
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrEgressDenied, err)
			}
			return e.checkAddr(host, ap.Addr().Unmap(), named)
		}}
	return d.DialContext(ctx, network, addr)
}

// Client returns an HTTP client for webhooks under the policy: no
// proxy, every connection checked, no redirect followed.
func (e *Egress) Client() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = e.DialContext
	return noRedirects(&http.Client{Transport: t})
}
