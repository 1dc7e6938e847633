; Inno Setup script of the Windows installer. Build the app first (make package, on Windows:
; python packaging\build.py), then: iscc packaging\windows\edgestudio.iss
; It installs dist\EdgeStudio, adds a Start-menu entry and, unless unticked, associates .onnx
; files with EdgeStudio (double-click opens them; a running window receives them).
; The version is kept equal to pyproject.toml's by tests/test_packaging_files.py.

#define AppName "EdgeStudio"
#define AppVersion "0.1.0"
#define AppExe "EdgeStudio.exe"
#define ProgId "EdgeStudio.onnx"

[Setup]
AppId={{6D1E2F3A-7B44-4C51-9E0B-5A3C8E2D9F10}
AppName={#AppName}
AppVersion={#AppVersion}
AppPublisher=EdgeStudio
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
OutputDir=..\..\dist
OutputBaseFilename=EdgeStudio-{#AppVersion}-setup
SetupIconFile=..\..\resources\icons\edgestudio.ico
UninstallDisplayIcon={app}\{#AppExe}
ChangesAssociations=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
Compression=lzma2
SolidCompression=yes

[Tasks]
Name: "associate"; Description: "Open .onnx files with {#AppName}"; GroupDescription: "File association:"
Name: "desktopicon"; Description: "Create a desktop shortcut"; GroupDescription: "Shortcuts:"; Flags: unchecked

[Files]
Source: "..\..\dist\EdgeStudio\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{group}\Uninstall {#AppName}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; HKA is HKCU for a per-user install and HKLM for an all-users one.
Root: HKA; Subkey: "Software\Classes\.onnx"; ValueType: string; ValueName: "Content Type"; ValueData: "application/x-onnx"; Flags: uninsdeletevalue; Tasks: associate
Root: HKA; Subkey: "Software\Classes\.onnx\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue; Tasks: associate
Root: HKA; Subkey: "Software\Classes\{#ProgId}"; ValueType: string; ValueName: ""; ValueData: "ONNX model"; Flags: uninsdeletekey; Tasks: associate
Root: HKA; Subkey: "Software\Classes\{#ProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\{#AppExe},0"; Tasks: associate
Root: HKA; Subkey: "Software\Classes\{#ProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""; Tasks: associate
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".onnx"; ValueData: ""; Flags: uninsdeletekey

[Run]
Filename: "{app}\{#AppExe}"; Description: "Start {#AppName}"; Flags: nowait postinstall skipifsilent
