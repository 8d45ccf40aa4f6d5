// devmgr: the command-line program (serve, pods, podresources, plugin, checkpoint, bench, ...).
#include <iostream>

#include "CLI/CLI.hpp"
#include "cmd/devmgr/bench_cmd.h"
#include "cmd/devmgr/checkpoint_cmd.h"
#include "cmd/devmgr/command.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/completion_cmd.h"
#include "cmd/devmgr/dra_cmd.h"
#include "cmd/devmgr/man_cmd.h"
#include "cmd/devmgr/plugin_cmd.h"
#include "cmd/devmgr/podresources_cmd.h"
#include "cmd/devmgr/pods_cmd.h"
#include "cmd/devmgr/serve_cmd.h"
#include "cmd/devmgr/slices_cmd.h"

int main(int argc, char** argv) {
  using devmgr::cli::kExitOk;
  using devmgr::cli::kExitUsage;
  CLI::App app("The Kubernetes device manager as a C++ module, daemon and tools", "devmgr");
  app.set_version_flag("--version", DEVMGR_VERSION);
  app.require_subcommand(1);
  devmgr::cli::SetExamples(
      app, {{"Run the node side in a folder of your own, without root",
             "devmgr serve --root-dir /tmp/node"},
            {"Admit a pod there, and see its devices",
             "devmgr pods admit --root-dir /tmp/node examples/pod.yaml"},
            {"The help of a command", "devmgr help pods admit"},
            {"Complete devmgr's commands and flags in bash", "source <(devmgr completion bash)"}});

  devmgr::cli::CommandResult result;
  devmgr::cli::AddServeCommand(app, result);
  devmgr::cli::AddPodsCommand(app, result);
  devmgr::cli::AddCheckpointCommand(app, result);
  devmgr::cli::AddDraCommand(app, result);
  devmgr::cli::AddSlicesCommand(app, result);
  devmgr::cli::AddPluginCommand(app, result);
  devmgr::cli::AddPodResourcesCommand(app, result);
  devmgr::cli::AddBenchCommand(app, result);
  devmgr::cli::AddCompletionCommand(app, result);
  devmgr::cli::AddManCommand(app, result);
  devmgr::cli::AddHelpCommand(app, result);

  int code = kExitOk;
  try {
    app.parse(argc, argv);
    code = result.exit_code;
  } catch (const CLI::CallForHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e);
  } catch (const CLI::ParseError& e) {
    return devmgr::cli::Fail(kExitUsage, devmgr::cli::UsageError(app, e));
  }
  return devmgr::cli::OutputWritten(code);
}
