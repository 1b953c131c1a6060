package trend

// Defaults of the change-point detection (docs/trends.md).
const (
	// DefaultAlpha is the significance level of the permutation test.
	DefaultAlpha = 0.05
	// DefaultMinShift is the relative change of the segments' medians
	// below which a change point is not flagged (2 %).
	DefaultMinShift = 0.02
	// DefaultPermutations is the number of permutations per test (the
	// smallest p-value it can give is 1/(1+199) = 0.005).
	DefaultPermutations = 199
	// DefaultSeed seeds the permutations: the same input gives the same
	// change points.
	DefaultSeed = 26
)
