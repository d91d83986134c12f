"""Pure codecs of the TrinityLake format (SPEC 2-5): bytes <-> values, no I/O."""
