//===- ToolSupport.cpp - What cgc-run and cgc-ort-run share ---------------===//

#include "ToolSupport.h"

#include "cgc/version.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <utility>

namespace cgc::run {

std::string versionText(const std::string &tool) {
  return tool + " " CGC_PROJECT_VERSION_STRING " (CGC IR " +
         std::to_string(CGC_IR_VERSION_MAJOR) + "." + std::to_string(CGC_IR_VERSION_MINOR) + "." +
         std::to_string(CGC_IR_VERSION_PATCH) + ")";
}

bool checkOutputPath(const std::string &path, std::string &error) {
  size_t slash = path.find_last_of('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  struct stat st;
  if (stat(folder.c_str(), &st) != 0) {
    error = path + ": cannot write there: folder '" + folder + "': " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = path + ": cannot write there: '" + folder + "' is not a folder";
    return false;
  }
  return true;
}

bool writeFile(const std::string &path, const void *data, size_t size, std::string &error) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(data, 1, size, file) == size;
  int writeErrno = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    error = path + ": " + std::strerror(writeErrno ? writeErrno : errno);
    return false;
  }
  return true;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool numberedFiles(const std::string &dir, const std::string &prefix,
                   std::vector<std::string> &paths, std::string &error) {
  DIR *d = opendir(dir.c_str());
  if (!d) {
    error = dir + ": cannot open the directory";
    return false;
  }
  std::vector<std::pair<int, std::string>> found;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || !endsWith(name, ".pb"))
      continue;
    std::string number = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos)
      continue;
    found.emplace_back(std::stoi(number), dir + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  paths.clear();
  for (auto &[n, path] : found)
    paths.push_back(path);
  return true;
}

long peakRssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, 6, "VmHWM:") == 0)
      return std::atol(line.c_str() + 6);
  return 0;
}

} // namespace cgc::run
