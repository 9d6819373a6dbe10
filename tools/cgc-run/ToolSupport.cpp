//===- ToolSupport.cpp - What cgc-run and cgc-ort-run share ---------------===//

#include "ToolSupport.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <utility>

namespace cgc::run {

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
