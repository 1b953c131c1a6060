// Package httpmsg is the http test's HTTP/1.1 on the client side: the GET
// request (BuildRequest) and the response, parsed with the same rules in
// two ways: from a bufio.Reader by the goroutine client (ReadHead,
// ReadBody; response.go) and incrementally, from bytes in any pieces, by
// the epoll client (Parser; parser.go). Bodies are discarded. Both are
// fuzzed (FuzzReadResponse, FuzzRespParser).
package httpmsg
