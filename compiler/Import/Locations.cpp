//===- Locations.cpp - Locations that name ONNX nodes ---------------------===//

#include "compiler/Import/Locations.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

namespace cgc {

Location getONNXFileLoc(MLIRContext *context, StringRef file) {
  return FileLineColLoc::get(StringAttr::get(context, file), 0, 0);
}

Location getONNXValueLoc(MLIRContext *context, StringRef name,
                         StringRef file) {
  return NameLoc::get(StringAttr::get(context, name),
                      getONNXFileLoc(context, file));
}

Location getONNXNodeLoc(MLIRContext *context, StringRef nodeName,
                        StringRef opType, StringRef file) {
  Location type = NameLoc::get(StringAttr::get(context, opType),
                               getONNXFileLoc(context, file));
  return NameLoc::get(StringAttr::get(context, nodeName), type);
}

std::optional<ONNXNodeLocInfo> getONNXNodeLocInfo(Location loc) {
  SmallVector<StringRef, 2> names;
  Location current = loc;
  while (auto name = dyn_cast<NameLoc>(current)) {
    names.push_back(name.getName().getValue());
    current = name.getChildLoc();
  }
  auto file = dyn_cast<FileLineColLoc>(current);
  if (!file || file.getLine() != 0 || names.size() > 2)
    return std::nullopt;
  ONNXNodeLocInfo info;
  info.file = file.getFilename().getValue();
  if (!names.empty())
    info.node = names[0];
  if (names.size() == 2)
    info.opType = names[1];
  return info;
}

std::string describeLocation(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (std::optional<ONNXNodeLocInfo> info = getONNXNodeLocInfo(loc)) {
    os << info->file;
    if (!info->opType.empty())
      os << ": node '" << info->node << "' (" << info->opType << ")";
    else if (!info->node.empty())
      os << ": '" << info->node << "'";
    return text;
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
    return text;
  }
  if (isa<UnknownLoc>(loc))
    return "";
  // Look through a name to a file location written by the parser.
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string inner = describeLocation(name.getChildLoc());
    os << (inner.empty() ? "" : inner + ": ") << "'"
       << name.getName().getValue() << "'";
    return text;
  }
  loc.print(os);
  return text;
}

static StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

static void printDiagnostic(llvm::raw_ostream &os, Location loc,
                            DiagnosticSeverity severity, StringRef message) {
  std::string where = describeLocation(loc);
  if (!where.empty())
    os << where << ": ";
  os << severityName(severity) << ": " << message << "\n";
}

ONNXDiagnosticHandler::ONNXDiagnosticHandler(MLIRContext *context,
                                             llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context), os(os) {
  setHandler([this](Diagnostic &diag) {
    printDiagnostic(this->os, diag.getLocation(), diag.getSeverity(),
                    diag.str());
    // The first notes; a long list (every unsupported node) is counted.
    constexpr size_t kPrintedNotes = 16;
    size_t notes = 0;
    for (Diagnostic &note : diag.getNotes())
      if (notes++ < kPrintedNotes)
        printDiagnostic(this->os, note.getLocation(), note.getSeverity(),
                        note.str());
    if (notes > kPrintedNotes)
      this->os << "(" << notes - kPrintedNotes << " more notes)\n";
    this->os.flush();
    return success();
  });
}

} // namespace cgc
