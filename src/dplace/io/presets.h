// The bundled cluster presets (clusters/*.json), compiled in by CMake (presets.cc is generated).
#pragma once

#include <span>
#include <string_view>

namespace dplace::io {

struct Preset {
  std::string_view name;
  std::string_view json;
};

extern const std::span<const Preset> kPresets;

}  // namespace dplace::io
