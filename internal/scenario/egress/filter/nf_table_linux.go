package filter

import (
	"fmt"

	"github.com/google/nftables"
)

// iptables-nft creates the nftables table "ip filter" (with base chains for
// the built-in iptables chains) on first use. nfFilterTableExists and
// nfDeleteFilterTableIfEmpty let the iptables-nft mechanisms leave a
// namespace as they found it: the table is deleted on Close only if Load
// created it and no rule is left in any of its chains.
const nfIPTablesTable = "filter"

// nftNS opens nftables connections in t's namespace: by its descriptor, or
// this process's own for a local target (NSFd < 0; entering a namespace
// needs CAP_SYS_ADMIN, which a pod filtering itself does not have).
func nftNS(t Target) []nftables.ConnOption {
	if t.NSFd < 0 {
		return nil
	}
	return []nftables.ConnOption{nftables.WithNetNSFd(t.NSFd)}
}

func nfFilterTableExists(t Target) (bool, error) {
	conn, err := nftables.New(nftNS(t)...)
	if err != nil {
		return false, fmt.Errorf("open nftables netlink socket: %w", err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return false, fmt.Errorf("list nftables tables: %w", err)
	}
	for _, tb := range tables {
		if tb.Name == nfIPTablesTable {
			return true, nil
		}
	}
	return false, nil
}

func nfDeleteFilterTableIfEmpty(t Target) error {
	if ok, err := nfFilterTableExists(t); err != nil || !ok {
		return err
	}
	conn, err := nftables.New(nftNS(t)...)
	if err != nil {
		return fmt.Errorf("open nftables netlink socket: %w", err)
	}
	table := &nftables.Table{Name: nfIPTablesTable, Family: nftables.TableFamilyIPv4}
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("list nftables chains: %w", err)
	}
	for _, c := range chains {
		if c.Table.Name != nfIPTablesTable {
			continue
		}
		rules, err := conn.GetRules(table, c)
		if err != nil {
			return fmt.Errorf("list rules of chain %s: %w", c.Name, err)
		}
		if len(rules) > 0 {
			return nil // someone else's rules: leave the table
		}
	}
	conn.DelTable(table)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("delete empty nftables table ip %s: %w", nfIPTablesTable, err)
	}
	return nil
}
