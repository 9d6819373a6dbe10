/*===- cgc/version.h - Versions shared by compiler and runtime -------------===*
 *
 * Plain C, no dependencies: included by the dialects (written into bytecode),
 * the compiled-model container and the runtime that checks it.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_VERSION_H
#define CGC_VERSION_H

/* Semantic version of the CGC dialects (cgc, cgc_op, cgc_pattern), versioned
 * together. The dialects are only ever extended: a minor bump adds ops, types
 * or attributes; a major bump would change or remove them, and readers reject
 * IR with a newer major version.
 *   1.0  the first release of the dialects and their ops up to
 *        non_max_suppression and erf_gelu.
 *   1.1  cgc_op.check (a run-time condition a compile-time bound relies on:
 *        a Loop steered at run time, TopK with a run-time K). */
#define CGC_IR_VERSION_MAJOR 1
#define CGC_IR_VERSION_MINOR 1
#define CGC_IR_VERSION_PATCH 0

/* Version of the project (tools, runtime library). */
#define CGC_PROJECT_VERSION_STRING "0.1.0"

#endif /* CGC_VERSION_H */
