# The functional emulator (docs/emulator.md).
target_sources(tdmsim_descriptors PRIVATE
)
