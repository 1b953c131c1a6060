// Package labtest holds test helpers that bring a lab up (internal/lab)
// for a test and check, once it is down, that it left nothing behind.
// Tests of the lab and of the packages that build their own datapaths on
// it share them.
package labtest
