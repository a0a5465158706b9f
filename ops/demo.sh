#!/usr/bin/env bash
# ops/demo.sh - the end-to-end demo. It needs the dispatch engine, which is not
# built yet; until then this says so plainly instead of pretending.
echo "demo: not available yet - it arrives with the worker dispatch engine (see README.md)" >&2
exit 1
