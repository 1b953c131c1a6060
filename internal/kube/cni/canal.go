package cni

import (
	"strings"
)

// canalMode reads canal-config's net-conf.json: flannel's backend, with
// Calico's policy ("flannel vxlan, calico policy"); and its veth_mtu, the
// pods' MTU (a setting, with evidence when it is 0).
func canalMode(data map[string]string) (string, map[string]string, []string, error) {
	s, ok := data[flannelKey]
	if !ok {
		return "", nil, []string{"canal: no " + flannelKey + " in canal-config"}, nil
	}
	mode, set, ev, err := parseFlannelNetConf(s)
	if err != nil {
		return "", nil, nil, err
	}
	v, ok, err := vethMTU(data)
	if err != nil {
		return "", nil, nil, err
	}
	if ok {
		set["veth_mtu"] = v
		if v == "0" {
			// felix's determinePodMTU (felix/dataplane/linux, Calico
			// v3.31): with no encapsulation of its own enabled, the
			// host interface's MTU.
			ev = append(ev, "canal: veth_mtu 0: the CNI plugin gives the pods the MTU calico-node detected, which in policy-only mode is the host interface's: flannel's encapsulation is not subtracted")
		}
	}
	return "flannel " + mode + ", calico policy", set, ev, nil
}

// canalAgentMode is canalMode with felix's dataplane from calico-node's
// environment ("flannel vxlan, calico policy, iptables dataplane").
func canalAgentMode(data, env map[string]string, pod string) (string, map[string]string, []string, error) {
	mode, set, ev, err := canalMode(data)
	if err != nil || mode == "" {
		return mode, set, ev, err
	}
	cmode, cset, cev, err := calicoAgentMode(map[string]string{}, env, pod)
	if err != nil {
		return "", nil, nil, err
	}
	for k, v := range cset {
		set[k] = v
	}
	_, dataplane, _ := strings.Cut(cmode, ", ")
	return mode + ", " + dataplane, set, append(ev, cev...), nil
}
