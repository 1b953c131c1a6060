package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// Labels of a cluster's run (the Kubernetes backend) that belong to its
// file rather than to the cell: the CNI's, the cluster's and its nodes'.
const (
	labelCNI     = "cni"
	cniPrefix    = "cni_"
	labelCluster = "cluster"
	// labelKubeProxyMode is the CNI's configuration too where the CNI
	// replaces kube-proxy (Cilium's, Calico's eBPF dataplane): with --by
	// cni it is left out of the matching when the files differ in it.
	labelKubeProxyMode = "kube_proxy_mode"
	// labelServiceProxy names what serves ClusterIP services (kube-proxy
	// and its mode, or a CNI's replacement; a services run on a cluster):
	// --by service_proxy across files compares cluster configurations as
	// --by cni does, and the CNI itself, where the files differ in it, is
	// then part of the compared configuration.
	labelServiceProxy = "service_proxy"
)

// nodeLabels are left out of the matching across files only when each
// file's runs stay distinct without them ("as needed": another cluster's
// nodes have other names; one file's cells never merge).
var nodeLabels = []string{"client_node", "server_node"}

// crossFile is a --by comparison over several files: their runs pooled into
// one set, and how runs of different files are matched.
type crossFile struct {
	set *result.Set
	// origin is each pooled run's input (its index in the inputs).
	origin map[*result.Run]int
	// ignored are the labels left out of the matching, with why.
	ignored []string
	// norm is what is matched of a run's labels.
	norm func(map[string]string) map[string]string
	// owned are run settings that belong to the compared value (--by
	// cni: the pods' MTU is the CNI's), not a difference of measurement;
	// ownedDiffer is set when a compared cell's differed.
	owned       []string
	ownedDiffer bool
}

// mismatch is configMismatch without the settings the compared value owns.
func (cf *crossFile) mismatch(a, b *result.Run, sa, sb *result.Set) []string {
	var out []string
	for _, d := range configMismatch(a, b, sa, sb) {
		key, _, _ := strings.Cut(d, " ")
		if slices.Contains(cf.owned, key) {
			cf.ownedDiffer = true
			continue
		}
		out = append(out, d)
	}
	return out
}

// poolBy pools the inputs' runs for --by LABEL across files. Each value of
// the compared label must come from one file: two files with runs of the
// same value are refused (pooling their repeats would hide that they are
// two measurements; result.Merge does that deliberately, for one side of
// the gate). With --by cni (one of the compared labels is cni or a cni_*
// label: two modes of one CNI compare as two CNIs do) the runs
// are matched on their labels except the other cni_* labels, a datapath
// named after the CNI (cni-<name>), kube_proxy_mode where the files differ
// in it (a CNI that replaces kube-proxy), the cluster and, as needed, the
// nodes.
func poolBy(inputs []Input, by string, bys []string, key func(map[string]string) (string, bool)) (*crossFile, error) {
	cf := &crossFile{origin: map[*result.Run]int{}}
	owner := map[string]int{}
	var runs []result.Run
	var from []int
	for i, in := range inputs {
		for _, r := range in.Set.Runs {
			v, ok := key(r.Labels)
			if !ok {
				continue
			}
			if j, seen := owner[v]; seen && j != i {
				hint := ""
				if by == labelCNI {
					hint = " (two configurations of one CNI: --by cni,cni_mode)"
				}
				return nil, &UsageError{fmt.Sprintf("--by %s compares the values of one label inside one results file; got %d files, and across files each value must come from one file: %s and %s both have runs with %s=%s%s",
					by, len(inputs), inputs[j].Name, in.Name, by, v, hint)}
			}
			owner[v] = i
			runs = append(runs, r)
			from = append(from, i)
		}
	}
	first := inputs[0].Set
	cf.set = &result.Set{Schema: result.SchemaResults, Tool: first.Tool, Start: first.Start, End: first.End, Host: first.Host, Runs: runs}
	for _, in := range inputs {
		cf.set.Datapaths = append(cf.set.Datapaths, in.Set.Datapaths...)
	}
	for i := range cf.set.Runs {
		cf.origin[&cf.set.Runs[i]] = from[i]
	}
	byProxy := slices.Contains(bys, labelServiceProxy)
	byCNI := byProxy || slices.ContainsFunc(bys, func(b string) bool { return b == labelCNI || strings.HasPrefix(b, cniPrefix) })
	if !byCNI {
		cf.norm = func(l map[string]string) map[string]string { return l }
		return cf, nil
	}
	cf.owned = []string{"pod_mtu", "path_mtu"}
	drop := map[string]bool{labelCluster: true}
	present := map[string]bool{}
	proxyModes, cnis := map[string]bool{}, map[string]bool{}
	cniDatapath := false
	for _, r := range runs {
		for k, v := range r.Labels {
			present[k] = true
			if strings.HasPrefix(k, cniPrefix) && !slices.Contains(bys, k) {
				drop[k] = true
			}
			switch k {
			case labelKubeProxyMode:
				proxyModes[v] = true
			case labelCNI:
				cnis[v] = true
			}
		}
		if r.Labels[report.LabelDatapath] == "cni-"+r.Labels[labelCNI] {
			cniDatapath = true
		}
	}
	if len(proxyModes) > 1 && !slices.Contains(bys, labelKubeProxyMode) {
		drop[labelKubeProxyMode] = true
	}
	if byProxy && len(cnis) > 1 && !slices.Contains(bys, labelCNI) {
		drop[labelCNI] = true
	}
	norm := func(drop map[string]bool) func(map[string]string) map[string]string {
		return func(l map[string]string) map[string]string {
			out := make(map[string]string, len(l))
			for k, v := range l {
				if drop[k] {
					continue
				}
				if k == report.LabelDatapath && v == "cni-"+l[labelCNI] {
					v = "cni-<name>" // the CNI's own datapath, named after it
				}
				out[k] = v
			}
			return out
		}
	}
	withNodes := map[string]bool{}
	for k := range drop {
		withNodes[k] = true
	}
	for _, k := range nodeLabels {
		withNodes[k] = true
	}
	cf.norm = norm(drop)
	if distinctPerFile(runs, from, norm(withNodes)) {
		cf.norm, drop = norm(withNodes), withNodes
	}
	var cniLabels, fileLabels []string
	for k := range drop {
		if !present[k] {
			continue
		}
		if strings.HasPrefix(k, cniPrefix) || k == labelKubeProxyMode || k == labelCNI {
			cniLabels = append(cniLabels, k)
		} else {
			fileLabels = append(fileLabels, k)
		}
	}
	slices.Sort(cniLabels)
	report.SortKeysBy([]string{labelCluster, "client_node", "server_node"}, fileLabels)
	if len(cniLabels) > 0 {
		cf.ignored = append(cf.ignored, strings.Join(cniLabels, ", ")+" (the CNI's configuration)")
	}
	if cniDatapath {
		cf.ignored = append(cf.ignored, "datapath cni-<name> (named after the CNI; the baseline's is matched as is)")
	}
	if len(fileLabels) > 0 {
		cf.ignored = append(cf.ignored, strings.Join(fileLabels, ", ")+" (the file's cluster)")
	}
	return cf, nil
}

// distinctPerFile reports whether no two runs of one file have the same
// labels once projected by norm.
func distinctPerFile(runs []result.Run, from []int, norm func(map[string]string) map[string]string) bool {
	seen := map[string]bool{}
	for i, r := range runs {
		k := fmt.Sprintf("%d|%s", from[i], result.LabelKey(norm(r.Labels)))
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}
