#include "converter/fetch/curl_library.h"

#include <dlfcn.h>

#include "engine/core/error.h"

namespace gpen::fetch {

const std::vector<std::string>& curl_sonames() {
  static const std::vector<std::string> names{"libcurl.so.4", "libcurl-gnutls.so.4"};
  return names;
}

namespace {

template <typename F>
void bind(void* lib, const std::string& soname, const char* symbol, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!f) throw Error(soname + " has no " + symbol + ": not a usable libcurl (7.62 or newer is needed)");
}

}  // namespace

CurlLibrary load_curl(const std::vector<std::string>& sonames) {
  std::string tried, why;
  for (const std::string& name : sonames) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : ", ") + name;
      why = e ? e : "not found";
      continue;
    }
    CurlLibrary c;
    bind(lib, name, "curl_global_init", c.global_init);
    bind(lib, name, "curl_easy_init", c.easy_init);
    bind(lib, name, "curl_easy_cleanup", c.easy_cleanup);
    bind(lib, name, "curl_easy_setopt", c.easy_setopt);
    bind(lib, name, "curl_easy_perform", c.easy_perform);
    bind(lib, name, "curl_easy_getinfo", c.easy_getinfo);
    bind(lib, name, "curl_easy_strerror", c.easy_strerror);
    if (c.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error(name + ": curl_global_init failed");
    return c;
  }
  throw Error("downloading needs libcurl, which could not be loaded (tried " + tried + "; " + why +
              "); install it (Debian, Ubuntu: apt-get install libcurl4; Fedora, RHEL: dnf install libcurl)");
}

const CurlLibrary& curl() {
  static const CurlLibrary c = load_curl(curl_sonames());
  return c;
}

}  // namespace gpen::fetch
