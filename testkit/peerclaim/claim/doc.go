// Command claim claims peer names for a script's cluster (package
// peerclaim):
//
//	go run ./testkit/peerclaim/claim -owner scripts/x.sh -pid $$ name...
//
// It exits 1, saying who holds it, when another test or script holds one.
package main
