// Package fuzz holds FuzzAPI_post_routes: every POST, PATCH and PUT route of a
// live peer with seed bodies and what the fuzzer makes of them (make fuzz;
// make test runs its seeds).
package fuzz
