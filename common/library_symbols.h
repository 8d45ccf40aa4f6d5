// LibrarySymbols: finds the functions of a library loaded with dlopen, each into a pointer of its
// own signature, and remembers the first one the library lacks, so that a loader looks them all
// up in a row and checks once.
//
//   LibrarySymbols symbols(handle);
//   symbols.Find("curl_easy_init", curl.easy_init);
//   ...
//   if (symbols.missing() != nullptr) return an error naming it;
#pragma once

#include <dlfcn.h>

namespace devmgr {

class LibrarySymbols {
 public:
  explicit LibrarySymbols(void* library) : library_(library) {}

  // Find sets `function` to the symbol `name`; after a missing symbol it looks up no more.
  template <typename Function>
  void Find(const char* name, Function& function) {
    if (missing_ != nullptr) return;
    function = reinterpret_cast<Function>(dlsym(library_, name));
    if (function == nullptr) missing_ = name;
  }

  // The first symbol not found, or nullptr.
  const char* missing() const { return missing_; }

 private:
  void* library_;
  const char* missing_ = nullptr;
};

}  // namespace devmgr
