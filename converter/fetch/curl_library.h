#pragma once
// libcurl, loaded with dlopen when `gpen fetch` first downloads, not linked: the `gpen` binary a
// deployment copies then needs none of the libraries libcurl brings (GnuTLS or OpenSSL's TLS,
// Kerberos, LDAP, SSH, RTMP, IDN, ...) for restores that download nothing, and a machine without
// libcurl still restores. Loading it beats giving fetching its own executable: there is still one
// binary to copy, `gpen fetch --help` stays the real help, and the tests run the same code a user
// runs. The function types come from <curl/curl.h>, so every call is checked as if linked.
#include <curl/curl.h>

#include <string>
#include <vector>

namespace gpen::fetch {

struct CurlLibrary {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
};

// The sonames tried in order: Debian's and most distributions' libcurl (libcurl4, OpenSSL), then
// the GnuTLS build (libcurl3-gnutls), which has the same interface.
const std::vector<std::string>& curl_sonames();

// Loads the first of `sonames` that opens, with curl_global_init done. Throws gpen::Error naming
// every soname tried, why the last failed and how to install libcurl.
CurlLibrary load_curl(const std::vector<std::string>& sonames);

// load_curl(curl_sonames()), once per process (kept loaded until exit).
const CurlLibrary& curl();

}  // namespace gpen::fetch
