// Package shard splits a run into shards that run as independent
// processes (one per Slurm array task or make target) and checks, before
// their results are merged, that a set of shard files makes up one run.
//
// A shard is "K/N", K from 1 to N. Shard K of N of a run of T units
// (replications, streams, grid points) takes units floor((K-1)T/N) to
// floor(KT/N)-1: the shards cover the units once each, in order, whatever
// N and T (a shard may be empty).
//
// A shard file is JSON: a header that says what it is (format version,
// verb, the command's canonical arguments, every model file with its
// SHA-256, the shard index and count, the run's units and the shard's
// range) and the verb's data. Check refuses files that do not belong
// together: another verb, command, model content, shard count or total;
// a shard given twice; a shard missing; a range that is not the one its
// index gives. The data themselves are the verb's to combine (package
// ctmc/simulate for simulations, models/sweep for sweeps).
package shard
