package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// SplitList splits a scenario flag's comma-separated value; an empty
// element (a,,b, a trailing comma, or an empty value) is an error naming
// the flag, worded as the suite's own list flags.
func SplitList(flag, s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return nil, fmt.Errorf("--%s %q: empty element; separate values with single commas, e.g. --%s a,b", flag, s, flag)
		}
		out = append(out, p)
	}
	return out, nil
}

// Ints splits a comma-separated list of whole numbers (SplitList's rules).
func Ints(flag, s string) ([]int, error) {
	list, err := SplitList(flag, s)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(list))
	for _, p := range list {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %q is not a whole number", flag, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

// ListFlag is the value of a list flag once parsed: nil when the flag was
// not given (the scenario's default), else its elements.
func ListFlag(c Common, flag, value string) ([]string, error) {
	if !c.FlagChanged(flag) {
		return nil, nil
	}
	return SplitList(flag, value)
}

// IntsFlag is ListFlag for whole numbers.
func IntsFlag(c Common, flag, value string) ([]int, error) {
	if !c.FlagChanged(flag) {
		return nil, nil
	}
	return Ints(flag, value)
}
