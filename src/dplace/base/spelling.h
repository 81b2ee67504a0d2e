// "Did you mean ...?" for names a user typed: JSON keys, flags, subcommands, placers, presets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dplace {

// The candidate closest to `word` (Levenshtein distance, case-insensitive) when it is close
// enough to be a typo: at most a third of the word's length, and at least 1; "" otherwise.
std::string Closest(std::string_view word, const std::vector<std::string>& candidates);

// "a, b or c": the names a value may take, as a refusal lists them.
std::string OneOf(const std::vector<std::string_view>& names);

// " (did you mean 'x'?)", or "" when no candidate is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dplace
