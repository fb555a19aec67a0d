# MoE and tensor descriptor formats (docs/descriptor-format.md).
target_sources(tdmsim_descriptors PRIVATE
)
