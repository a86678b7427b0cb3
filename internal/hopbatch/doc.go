// Package hopbatch carries many HTTP requests from one peer to another in
// one: a Sender collects the requests it is given for the same address
// while its earlier batches there are still under way, and sends them as
// one POST whose body is their HTTP/1.1 wire form; Serve, on the other
// peer, reads them all, serves each with the handler it is given (as if
// it had come on its own, on the batch's connection), and streams each
// answer back, tagged with the request's place in the batch, as soon as
// that answer is complete. A slow request holds up no other answer.
//
// One request alone goes at once; requests pile up into a batch only while
// MaxInFlight batches to that address are unanswered, so batching costs a
// lone caller nothing and saves concurrent callers a round trip, TLS
// records and system calls each.
package hopbatch
