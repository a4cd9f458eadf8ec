// What a command built and no longer needs when it returns to exit: the process ends next, and the system
// takes a frontier plan's gigabyte back at once, where freeing it object by object costs about 0.2 s (L3,
// docs/scale.md). It stays reachable from a static, so leak checkers count it as live, not lost (LLVM's
// BuryPointer does the same for the compiler's AST).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace paraproof::cli {

template <class T>
void keepUntilExit(T&& object) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;  // never destroyed: that is the point
  kept->push_back(std::make_shared<std::decay_t<T>>(std::forward<T>(object)));
}

}  // namespace paraproof::cli
